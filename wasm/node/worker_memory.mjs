// The search worker's memory over many questions: Pyodide under Node, the core from its wheel, a built
// site read by range from its folder, each question through the calls worker.js makes (Site.prepare,
// Site.dense_ahead with the question's vector, Site.search, Site.discard).
//
//   node wasm/node/worker_memory.mjs --wheel CORE.whl --site SITE --questions QUESTIONS.json
//
// QUESTIONS.json: {"questions": [text, ...], "vectors": [[float, ...], ...]} (scripts/worker_memory.py
// writes it). Prints, every 25 questions and then while all are asked again, the WebAssembly memory (what
// the browser bench reports as the worker's Python memory: it grows in steps of a fifth, never shrinks)
// and the allocator's statistics from its mallinfo: in use, free inside its arena, and its peak footprint.
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = (relative) => fileURLToPath(new URL(relative, import.meta.url));
const MB = (bytes) => (bytes / 1e6).toFixed(1);

const ALLOCATOR = `
import ctypes
class MallInfo(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL(None)
libc.mallinfo.restype = MallInfo
def allocator():
    info = libc.mallinfo()
    return [info.uordblks, info.fordblks, libc.malloc_max_footprint()]
`;

const WORKER_CALLS = `
import json
from readingroom_core.browser import open_folder
site = open_folder(SITE)
site.load_semantic()
def ask(query, vector):
    request = json.dumps({"query": query, "k": 10, "mode": "hybrid", "filters": {}})
    prepared = json.loads(site.prepare(request))
    if "error" in prepared:
        return
    site.dense_ahead(request, vector)
    site.search(prepared["search"], vector)
    site.discard(prepared["search"])
`;

async function main() {
  const { values } = parseArgs({ options: { wheel: { type: "string" }, site: { type: "string" }, questions: { type: "string" } } });
  if (!values.wheel || !values.site || !values.questions) throw new Error("--wheel, --site and --questions are required");
  const { loadPyodide } = await import(here("../node_modules/pyodide/pyodide.mjs"));
  const pyodide = await loadPyodide({ indexURL: here("../node_modules/pyodide/"), stdout: (line) => process.stderr.write(line + "\n") });
  const wheel = await readFile(values.wheel);
  const sitePackages = pyodide.runPython("import sysconfig; sysconfig.get_path('purelib')");
  pyodide.unpackArchive(new Uint8Array(wheel.buffer, wheel.byteOffset, wheel.byteLength), "wheel", { extractDir: sitePackages });
  pyodide.FS.mkdirTree(values.site);
  pyodide.mountNodeFS(values.site, values.site);
  pyodide.runPython(ALLOCATOR);
  const allocator = pyodide.globals.get("allocator");
  const report = (label) => {
    const [inUse, free, peak] = allocator().toJs();
    console.log(`${label}\tmemory ${MB(pyodide._module.HEAP8.byteLength)} MB\tin use ${MB(inUse)}\tfree ${MB(free)}\tpeak ${MB(peak)}`);
  };
  pyodide.globals.set("SITE", values.site);
  pyodide.runPython(WORKER_CALLS);
  report("opened");
  const ask = pyodide.globals.get("ask");
  const { questions, vectors } = JSON.parse(await readFile(values.questions, "utf8"));
  for (const pass of ["first sight", "asked again"]) {
    const started = performance.now();
    for (let i = 0; i < questions.length; i++) {
      ask(questions[i], new Float32Array(vectors[i]));
      if ((i + 1) % 25 === 0 || i + 1 === questions.length) report(`${pass} ${i + 1}`);
    }
    console.log(`${pass}: ${((performance.now() - started) / questions.length).toFixed(1)} ms a question`);
  }
}

await main();
