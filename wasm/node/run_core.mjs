// Runs the search core in Pyodide under Node: one JSON request on stdin, one JSON reply on stdout.
//
//   node wasm/node/run_core.mjs --wheel dist/readingroom_core-0.1.0-py3-none-any.whl < request.json
//
// Pyodide comes from wasm/node_modules/pyodide (npm, pinned in package.json), the core from its wheel,
// unpacked straight into site-packages: no micropip and no network, as on the static site. The request
// is handed to core_driver.py's `handle`; the reply adds how long Pyodide and the core took to load.
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = (relative) => fileURLToPath(new URL(relative, import.meta.url));

async function readStdin() {
  const parts = [];
  for await (const part of process.stdin) parts.push(part);
  return Buffer.concat(parts).toString("utf8");
}

async function startPyodide() {
  const { loadPyodide } = await import(here("../node_modules/pyodide/pyodide.mjs"));
  // Python's prints go to stderr so that stdout carries the JSON reply alone.
  return loadPyodide({
    indexURL: here("../node_modules/pyodide/"),
    stdout: (line) => process.stderr.write(line + "\n"),
    stderr: (line) => process.stderr.write(line + "\n"),
  });
}

async function installWheel(pyodide, wheelPath) {
  const sitePackages = pyodide.runPython("import sysconfig; sysconfig.get_path('purelib')");
  // A Node Buffer is not a typed array Pyodide accepts; a plain Uint8Array view of it is.
  const wheel = await readFile(wheelPath);
  const bytes = new Uint8Array(wheel.buffer, wheel.byteOffset, wheel.byteLength);
  pyodide.unpackArchive(bytes, "wheel", { extractDir: sitePackages });
  pyodide.runPython("import importlib; importlib.invalidate_caches(); import readingroom_core");
}

function mountFolders(pyodide, folders) {
  for (const folder of folders) {
    pyodide.FS.mkdirTree(folder);
    pyodide.mountNodeFS(folder, folder);
  }
}

async function main() {
  const { values } = parseArgs({ options: { wheel: { type: "string" } } });
  if (!values.wheel) throw new Error("--wheel PATH (the readingroom_core wheel) is required");
  const request = await readStdin();
  let started = performance.now();
  const pyodide = await startPyodide();
  const pyodideLoadS = (performance.now() - started) / 1000;
  started = performance.now();
  await installWheel(pyodide, values.wheel);
  const coreInstallS = (performance.now() - started) / 1000;
  pyodide.runPython(await readFile(here("core_driver.py"), "utf8"));
  mountFolders(pyodide, JSON.parse(pyodide.globals.get("folders")(request)));
  const reply = JSON.parse(pyodide.globals.get("handle")(request));
  reply.runtime = { pyodide_load_s: pyodideLoadS, core_install_s: coreInstallS, node: process.version };
  process.stdout.write(JSON.stringify(reply));
}

await main();
