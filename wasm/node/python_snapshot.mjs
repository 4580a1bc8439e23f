// Makes the memory snapshot of Pyodide's interpreter, the core wheel installed and its browser boundary
// imported, that the site's search worker restores instead of booting Python (python_start.js
// startPython): restoring takes a fraction of a boot's time. Run by the build
// (builder/site/runtime.py python_runtime); Node resolves Pyodide from wasm/node_modules, the same
// package the site copies, so the snapshot matches the site's pyodide.asm.wasm (Pyodide refuses one from
// another build when it restores).
//
//   node wasm/node/python_snapshot.mjs imports <core wheel> <list out> [<stdlib zip>]
//   node wasm/node/python_snapshot.mjs compile <stdlib zip> <list> <zip out>
//   node wasm/node/python_snapshot.mjs snapshot <core wheel> <stdlib zip> <snapshot out>
//   node wasm/node/python_snapshot.mjs stale <snapshot> <stdlib zip>
//
// `imports` boots as a visitor's worker does (Pyodide's whole standard library, or the one given),
// installs the wheel and imports the boundary, and lists the standard library's files that were imported:
// the build ships a standard library of those (runtime.py trimmed_stdlib), `compile` compiles those
// modules with this very Python (a zip holds no bytecode cache, so a boot from the sources compiles every
// module it imports, most of its time: commit d2c6493), and `snapshot` is made with that very zip, since
// the interpreter's memory holds the directory of the zip it imported from, and with malloc's free memory
// zeroed (`stale` restores a snapshot and counts what of that memory is not zero).
//
// The same inputs give the same bytes, so a rebuild keeps the snapshot's hashed name: Python runs under
// a clock that only ticks when read and a seeded source of randomness (the hash secret and `random`'s
// state are in the snapshot, shared by every visitor; the search core uses neither for anything secret).
import crypto from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";

const CORE_BOUNDARY = "readingroom_core.browser"; // python_start.js imports the same module after a restore
const EPOCH_MS = Date.UTC(2020, 0, 1);
const LARGEST_REQUEST = 1 << 24; // bytes: forEachFreeChunk's first request, halved as they fail
const FREE_CHUNK_LINKS = 32; // bytes at the start of a free chunk where dlmalloc keeps its list links

function determinism() {
  let state = 0x9e3779b9;
  crypto.randomFillSync = (view) => {
    const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
    for (let i = 0; i < bytes.length; i++) {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      bytes[i] = state >>> 24;
    }
    return view;
  };
  let ticks = 0;
  performance.now = () => (ticks += 0.001);
  Date.now = () => EPOCH_MS + ticks;
}

// Where each imported module was loaded from, inside the standard library's zip (its path there); the
// frozen ones (os, io, codecs and others) come from Python's binary, not the zip.
const IMPORTED_FROM_STDLIB = `
import json, sys
zip_root = next(path for path in sys.path if path.endswith(".zip")) + "/"
origins = (getattr(getattr(module, "__spec__", None), "origin", None) for module in list(sys.modules.values()))
json.dumps(sorted({origin[len(zip_root):] for origin in origins if (origin or "").startswith(zip_root)}))
`;
// Each chunk malloc holds free, handed to `visit(start, end)` while it is allocated, then freed again:
// malloc is held to the memory it has (its footprint limit) so that it hands out what is free instead of
// growing, largest pieces first. The limit lives in Python's memory (and so in a snapshot): it is put
// back as it was. Pyodide's malloc is dlmalloc, whose functions its module exports.
function forEachFreeChunk(module, visit) {
  const limit = module._malloc_footprint_limit();
  module._malloc_set_footprint_limit(module._malloc_footprint());
  const taken = [];
  for (let size = LARGEST_REQUEST; size >= FREE_CHUNK_LINKS; ) {
    const at = module._malloc(size);
    if (!at) {
      size >>>= 1;
      continue;
    }
    visit(at, at + size);
    taken.push(at);
  }
  for (const at of taken) module._free(at);
  module._malloc_set_footprint_limit(limit);
  if (module._malloc_footprint_limit() !== limit) throw new Error("malloc's footprint limit was not restored");
}

// Freed memory keeps stale bytes (Python's boot and import scratch, collected garbage), which a snapshot
// would carry and which gzip compresses poorly, so it is zeroed, after collecting Python's garbage, and the
// snapshot (the same for every list) is smaller as the site stores it (builder/site/store.py; commit
// 0e96544 measured it).
function zeroFreeMemory(pyodide) {
  pyodide.runPython("import gc; gc.collect()");
  forEachFreeChunk(pyodide._module, (start, end) => pyodide._module.HEAPU8.fill(0, start, end));
}

// What a restored snapshot holds in malloc's free memory: {free, stale}, the bytes of its free chunks
// (past the links malloc keeps at their start) and how many of them are not zero (tests/builder/test_render.py).
function staleFreeBytes(module) {
  let free = 0;
  let stale = 0;
  forEachFreeChunk(module, (start, end) => {
    const bytes = module.HEAPU8.subarray(start + FREE_CHUNK_LINKS, end);
    free += bytes.length;
    stale += bytes.length - bytes.filter((byte) => byte === 0).length;
  });
  return { free, stale };
}

// The zip at STDLIB_IN with each module that Python's boot and the core's import read (IMPORTED, as
// `imports` lists them) replaced by its bytecode, written to STDLIB_OUT: sourceless .pyc files (which
// zipimport prefers) that name the path the source would have had, unchecked, since there is no source to
// check them against. They are stored: the site gzips the whole zip, which packs bytecode closer than a
// zip's per-file deflate does, and importing needs no inflating. The modules kept only because their
// package is (runtime.py trimmed_stdlib) stay as they were, deflated sources, which download smaller than
// their bytecode would (commit 75ec6fe).
const COMPILE_STDLIB = `
import py_compile, sys, zipfile
zip_root = next(path for path in sys.path if path.endswith(".zip")) + "/"
with zipfile.ZipFile(STDLIB_IN) as source, zipfile.ZipFile(STDLIB_OUT, "w") as target:
    for entry in source.infolist():
        if entry.filename not in IMPORTED:
            target.writestr(entry, source.read(entry))
            continue
        with open("/tmp/module.py", "wb") as module:
            module.write(source.read(entry))
        py_compile.compile("/tmp/module.py", "/tmp/module.pyc", zip_root + entry.filename, doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        with open("/tmp/module.pyc", "rb") as compiled:
            target.writestr(zipfile.ZipInfo(entry.filename + "c", entry.date_time), compiled.read())
`;
const STDLIB_IN = "/tmp/stdlib.zip";
const STDLIB_OUT = "/tmp/stdlib-compiled.zip";

const [mode, ...args] = process.argv.slice(2);
const ARGUMENTS = { imports: [2, 3], compile: [3, 3], snapshot: [3, 3], stale: [2, 2] };
const [fewest, most] = ARGUMENTS[mode] ?? [1, 0];
if (args.length < fewest || args.length > most || args.some((arg) => !arg)) {
  console.error("usage: node python_snapshot.mjs imports <core wheel> <list out> [<stdlib zip>]");
  console.error("       node python_snapshot.mjs compile <stdlib zip> <list> <zip out>");
  console.error("       node python_snapshot.mjs snapshot <core wheel> <stdlib zip> <snapshot out>");
  console.error("       node python_snapshot.mjs stale <snapshot> <stdlib zip>");
  process.exit(2);
}
determinism();
// Emscripten keeps the program's path (and its arguments) in Python's memory, as argv[0] and the `_`
// variable: a fixed name keeps the snapshot's bytes the same wherever the checkout lives.
process.argv.splice(1, process.argv.length - 1, "python_snapshot.mjs");
const { loadPyodide } = await import("pyodide");
if (mode === "compile") {
  const [stdlib, list, out] = args;
  const IMPORTED = new Set(JSON.parse(readFileSync(list, "utf8")));
  const pyodide = await loadPyodide();
  pyodide.FS.writeFile(STDLIB_IN, readFileSync(stdlib));
  pyodide.runPython(COMPILE_STDLIB, { globals: pyodide.toPy({ IMPORTED, STDLIB_IN, STDLIB_OUT }) });
  writeFileSync(out, pyodide.FS.readFile(STDLIB_OUT));
} else if (mode === "stale") {
  const [snapshot, stdLibURL] = args;
  const restored = await loadPyodide({ _loadSnapshot: new Uint8Array(readFileSync(snapshot)), stdLibURL });
  console.log(JSON.stringify(staleFreeBytes(restored._module)));
} else {
  const [wheelPath, ...rest] = args;
  const given = mode === "imports" ? rest[1] : rest[0]; // the standard library to boot with, if given
  const pyodide = await loadPyodide({ ...(given && { stdLibURL: given }), _makeSnapshot: mode === "snapshot" });
  const sitePackages = pyodide.runPython("import sysconfig; sysconfig.get_path('purelib')");
  pyodide.unpackArchive(new Uint8Array(readFileSync(wheelPath)), "wheel", { extractDir: sitePackages });
  pyodide.runPython(`import importlib; importlib.invalidate_caches(); import ${CORE_BOUNDARY}`);
  if (mode === "imports") writeFileSync(rest[0], pyodide.runPython(IMPORTED_FROM_STDLIB));
  else {
    zeroFreeMemory(pyodide);
    writeFileSync(rest[1], pyodide.makeMemorySnapshot());
  }
}
