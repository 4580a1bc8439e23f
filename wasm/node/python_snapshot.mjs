// Makes the memory snapshot of Pyodide's interpreter, the core wheel installed and its browser boundary
// imported, that the site's search worker restores instead of booting Python (python_start.js
// startPython): restoring takes a fraction of a boot's time. Run by the build
// (builder/site/runtime.py python_runtime); Node resolves Pyodide from wasm/node_modules, the same
// package the site copies, so the snapshot matches the site's pyodide.asm.wasm (Pyodide refuses one from
// another build when it restores).
//
//   node wasm/node/python_snapshot.mjs imports <core wheel> <list out>
//   node wasm/node/python_snapshot.mjs snapshot <core wheel> <stdlib zip> <snapshot out>
//
// `imports` boots as a visitor's worker does (Pyodide's whole standard library), installs the wheel and
// imports the boundary, and lists the standard library's files that were imported: the build ships a
// standard library of those (runtime.py trimmed_stdlib), and `snapshot` is made with that very zip, since
// the interpreter's memory holds the directory of the zip it imported from.
//
// The same inputs give the same bytes, so a rebuild keeps the snapshot's hashed name: Python runs under
// a clock that only ticks when read and a seeded source of randomness (the hash secret and `random`'s
// state are in the snapshot, shared by every visitor; the search core uses neither for anything secret).
import crypto from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";

const CORE_BOUNDARY = "readingroom_core.browser"; // python_start.js imports the same module after a restore
const EPOCH_MS = Date.UTC(2020, 0, 1);

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

// Where each imported module came from, inside the standard library's zip (its path there).
const IMPORTED_FROM_STDLIB = `
import json, sys
zip_root = next(path for path in sys.path if path.endswith(".zip")) + "/"
json.dumps(sorted({
    module.__file__[len(zip_root):]
    for module in list(sys.modules.values())
    if (getattr(module, "__file__", None) or "").startswith(zip_root)
}))
`;

const [mode, wheelPath, ...rest] = process.argv.slice(2);
if (!["imports", "snapshot"].includes(mode) || !wheelPath || rest.length !== (mode === "imports" ? 1 : 2)) {
  console.error("usage: node python_snapshot.mjs imports <core wheel> <list out>");
  console.error("       node python_snapshot.mjs snapshot <core wheel> <stdlib zip> <snapshot out>");
  process.exit(2);
}
determinism();
const { loadPyodide } = await import("pyodide");
const pyodide = await loadPyodide(
  mode === "imports" ? {} : { _makeSnapshot: true, stdLibURL: rest[0] },
);
const sitePackages = pyodide.runPython("import sysconfig; sysconfig.get_path('purelib')");
pyodide.unpackArchive(new Uint8Array(readFileSync(wheelPath)), "wheel", { extractDir: sitePackages });
pyodide.runPython(`import importlib; importlib.invalidate_caches(); import ${CORE_BOUNDARY}`);
if (mode === "imports") writeFileSync(rest[0], pyodide.runPython(IMPORTED_FROM_STDLIB));
else writeFileSync(rest[1], pyodide.makeMemorySnapshot());
