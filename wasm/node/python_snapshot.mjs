// Makes the memory snapshot of Pyodide's interpreter, the core wheel installed and its browser boundary
// imported, that the site's search worker restores instead of booting Python (python_start.js
// startPython): restoring takes a fraction of a boot's time. Run by the build
// (builder/stages/runtime.py python_snapshot); Node resolves Pyodide from wasm/node_modules, the same
// package the site copies, so the snapshot matches the site's pyodide.asm.wasm (Pyodide refuses one from
// another build when it restores).
//
//   node wasm/node/python_snapshot.mjs <core wheel> <snapshot out>
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

const [wheelPath, outPath] = process.argv.slice(2);
if (!wheelPath || !outPath) {
  console.error("usage: node python_snapshot.mjs <core wheel> <snapshot out>");
  process.exit(2);
}
determinism();
const { loadPyodide } = await import("pyodide");
const pyodide = await loadPyodide({ _makeSnapshot: true });
const sitePackages = pyodide.runPython("import sysconfig; sysconfig.get_path('purelib')");
pyodide.unpackArchive(new Uint8Array(readFileSync(wheelPath)), "wheel", { extractDir: sitePackages });
pyodide.runPython(`import importlib; importlib.invalidate_caches(); import ${CORE_BOUNDARY}`);
writeFileSync(outPath, pyodide.makeMemorySnapshot());
