// Python in the search worker: Pyodide's own downloads (gunzipped and counted here), and the interpreter
// with the search core, restored from the build's memory snapshot or else booted from the core's wheel.
//
// Booting Python and importing the core takes seconds of a first visit on a busy machine; the build ships
// a memory snapshot of that interpreter, made by Node from the same Pyodide and core wheel
// (wasm/node/python_snapshot.mjs), and restoring it takes a fraction of that. Its hashed name changes
// with the wheel or Pyodide; Pyodide itself refuses a snapshot of another build. Anything wrong with it
// (missing, damaged, refused) means booting Python from the wheel, as a site without one would.
// The core's modules are in the restored memory but not on its disk; importing the browser boundary
// imports them all (readingroom_core/browser.py), so the restored interpreter lacks none.

import { download, fetchBytes } from "./download.js";

/** @typedef {import("./protocol.js").Core} Core */
/** @typedef {import("./download.js").Progress} Progress */
/** @typedef {import("pyodide").PyodideAPI} PyodideAPI */
/** pyodide.asm.mjs's default export. @typedef {NonNullable<import("pyodide").PyodideConfig["createPyodideModule"]>} PyodideGlue */

const CORE_BOUNDARY = "readingroom_core.browser";
// The snapshot is megabytes more to download, which a slow line takes longer to bring than Python takes
// to boot (scripts/bench_browser.py measures both). So it gets SNAPSHOT_CHECK_MS from its first byte; if
// its pace by then says the rest would take more than SNAPSHOT_BUDGET_MS, it is cancelled and Python boots.
const SNAPSHOT_CHECK_MS = 150;
const SNAPSHOT_BUDGET_MS = 1000;
const SNAPSHOT_TOO_SLOW = new Error("the line is too slow for the Python snapshot to pay");
const nativeFetch = self.fetch.bind(self);

/**
 * Pyodide fetches its own files (pyodide.asm.wasm, python_stdlib.zip, pyodide-lock.json): while it
 * starts, `fetchForPython` (the worker's fetch meanwhile) hands it their .gz files decompressed and
 * counts the bytes as they come. Each is downloaded once: a second start (booting after the snapshot was
 * cancelled or refused) gets a copy of the same download. `fetched` resolves when the files keyword
 * search waits for are all in.
 * @param {string} pyodideRoot
 * @param {Set<string>} gzipped URLs with a .gz copy
 * @param {(n: number) => void} count
 */
export function pythonFiles(pyodideRoot, gzipped, count) {
  const waited = ["pyodide.asm.wasm", "python_stdlib.zip"];
  /** @type {Map<string, PromiseWithResolvers<void>>} */
  const arrived = new Map(waited.map((name) => [name, Promise.withResolvers()]));
  /** @type {Map<string, Promise<Response>>} url -> its Response, never read itself: each start gets a clone */
  const downloads = new Map();
  /** @param {string} url @param {string} name */
  async function downloadForPython(url, name) {
    const done = () => arrived.get(name)?.resolve();
    const { response, body } = await download(url, { gzipped: gzipped.has(url), count, done });
    const type = name.endsWith(".wasm") ? "application/wasm" : response.headers.get("Content-Type");
    return new Response(body, { headers: { "Content-Type": type || "application/octet-stream" } });
  }
  /** @param {string} url @returns {Promise<Response>} */
  function started(url) {
    let response = downloads.get(url);
    if (!response) downloads.set(url, (response = downloadForPython(url, url.slice(pyodideRoot.length))));
    return response;
  }
  /** @param {RequestInfo | URL} resource @param {RequestInit} [init] */
  async function fetchForPython(resource, init) {
    const url = new URL(resource instanceof Request ? resource.url : resource, self.location.href).href;
    if (!url.startsWith(pyodideRoot)) return nativeFetch(resource, init);
    return (await started(url)).clone();
  }
  // Pyodide asks for its files once its glue is downloaded and imported; they start now, beside the glue,
  // on a line that the glue alone leaves half idle, so Python starts sooner on a slow line (commit 45c293b).
  // A failure is Pyodide's to report, when it asks.
  for (const name of [...waited, "pyodide-lock.json"]) started(pyodideRoot + name).catch(() => {});
  const fetched = Promise.all([...arrived.values()].map((deferred) => deferred.promise));
  const glue = importUnpacked(pyodideRoot + "pyodide.asm.mjs", gzipped, count);
  glue.catch(() => {}); // reported by the start that awaits it
  return { fetchForPython, fetched, glue, forget: () => downloads.clear() };
}

/**
 * The default export of an ES module downloaded from its .gz (where the site has one), unpacked and
 * imported from memory: an import() of the host's URL would take the file as stored.
 * @param {string} url
 * @param {Set<string>} gzipped
 * @param {(n: number) => void} count
 * @returns {Promise<PyodideGlue>}
 */
async function importUnpacked(url, gzipped, count) {
  const { body } = await download(url, { gzipped: gzipped.has(url), count });
  const source = await new Response(body).blob();
  const inMemory = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  try {
    return (await import(inMemory)).default;
  } finally {
    URL.revokeObjectURL(inMemory);
  }
}

/**
 * A promise of the snapshot's bytes; it rejects with SNAPSHOT_TOO_SLOW when the download was cancelled.
 * @param {string} url
 * @param {boolean} gzipped
 * @param {(n: number) => void} count
 */
export function fetchSnapshot(url, gzipped, count) {
  const cancel = new AbortController();
  let received = 0;
  const counted = (/** @type {number} */ n) => ((received += n), count(n));
  const fetched = download(url, { gzipped, count: counted, signal: cancel.signal });
  fetched.then(async ({ response }) => {
    const size = Number(response.headers.get("Content-Length")) || 0;
    await new Promise((resolve) => setTimeout(resolve, SNAPSHOT_CHECK_MS));
    if ((SNAPSHOT_CHECK_MS * size) / Math.max(received, 1) > SNAPSHOT_BUDGET_MS) cancel.abort(SNAPSHOT_TOO_SLOW);
  }, () => {});
  return fetched.then(async ({ body }) => new Uint8Array(await new Response(body).arrayBuffer()));
}

/**
 * The core's browser module, from the snapshot or else from a booted Python, and how Python started.
 * @param {object} options
 * @param {Promise<Uint8Array>} options.snapshot
 * @param {Promise<PyodideGlue>} options.glue Pyodide's pyodide.asm.mjs, imported (`pythonFiles`)
 * @param {string} options.pyodideRoot
 * @param {string} options.wheel the core wheel's URL
 * @param {(n: number) => void} options.countWheel
 * @param {(step: string) => void} options.mark
 * @returns {Promise<{core: Core, pythonStart: "snapshot" | "boot", memoryBytes: () => number}>} memoryBytes: the
 *   size of Python's WebAssembly memory, which V8's heap figures leave out (it holds the core's caches)
 */
export async function startPython({ snapshot, glue, pyodideRoot, wheel, countWheel, mark }) {
  /** @type {typeof import("pyodide")} */
  const { loadPyodide } = await import(pyodideRoot + "pyodide.mjs");
  const createPyodideModule = await glue;
  mark("pyodide_imported");
  const options = { indexURL: pyodideRoot, createPyodideModule };
  try {
    const pyodide = await loadPyodide({ ...options, _loadSnapshot: handOnce(snapshot) });
    mark("python_started");
    /** @type {Core} */
    const core = pyodide.pyimport(CORE_BOUNDARY); // a restore that lost the core fails here, not later
    return { core, pythonStart: "snapshot", memoryBytes: () => wasmMemoryBytes(pyodide) };
  } catch (error) {
    if (error !== SNAPSHOT_TOO_SLOW) console.warn("The Python snapshot did not restore; booting Python instead:", error);
  }
  const wheelBytes = fetchBytes(wheel, { count: countWheel });
  const pyodide = await loadPyodide(options);
  mark("python_started");
  const sitePackages = pyodide.runPython("import sysconfig; sysconfig.get_path('purelib')");
  pyodide.unpackArchive(await wheelBytes, "wheel", { extractDir: sitePackages });
  pyodide.runPython("import importlib; importlib.invalidate_caches()");
  return { core: pyodide.pyimport(CORE_BOUNDARY), pythonStart: "boot", memoryBytes: () => wasmMemoryBytes(pyodide) };
}

/**
 * The snapshot for Pyodide, which keeps its options for the visit: given the snapshot's promise, it held
 * the unpacked snapshot (31 MB, copied into Python's memory at the restore) as long as the worker lived,
 * a third of the search worker's heap after start-up on a 1,000-paper list. A thenable that lets go of
 * the promise once Pyodide has awaited it leaves nothing to hold.
 * @param {Promise<Uint8Array>} snapshot
 * @returns {PromiseLike<Uint8Array>}
 */
function handOnce(snapshot) {
  /** @type {Promise<Uint8Array> | null} */
  let pending = snapshot;
  return {
    then(resolve, reject) {
      const handed = pending ?? Promise.reject(new Error("the Python snapshot was handed over already"));
      pending = null;
      return handed.then(resolve, reject);
    },
  };
}

/** @param {PyodideAPI} pyodide @returns {number} the bytes of its WebAssembly memory (grown, never shrunk) */
function wasmMemoryBytes(pyodide) {
  const internals = /** @type {{_module: {HEAP8: Uint8Array}}} */ (/** @type {unknown} */ (pyodide)); // not in its types
  return internals._module.HEAP8.byteLength;
}

/** pyodide.mjs comes in through import(), which no wrapper sees: its size is read from resource timing.
 * @param {string} prefix @param {(n: number) => void} count */
export function countModules(prefix, count) {
  for (const entry of performance.getEntriesByType("resource")) {
    const timing = /** @type {PerformanceResourceTiming} */ (entry);
    if (timing.name.startsWith(prefix) && timing.name.endsWith(".mjs")) count(timing.decodedBodySize);
  }
}
