// The search engine's thread: Pyodide runs the readingroom_core package (keyword search first); the
// query encoder runs in a worker of its own (encoder.js), reached through a port the page hands over.
// Every file comes from the site's own origin.
//
// Messages in:  {type: "init", config, port}, {type: "search", id, query, k, mode, filters},
//               {type: "evidence", id, question, history, budget}, {type: "verify", id, answer, evidence: {sources, pages}},
//               {type: "encoder_failed", error}: the page saw the encoder's worker fail to load
// Messages out: {type: "progress", source: "search", stage, kinds, timeline, python_start},
//               {type: "ready", which: "keyword"|"semantic"}, {type: "timeline", timeline},
//               {type: "result", id, hits, semantic} | {type: "result", id, error}, {type: "failed", error},
//               {type: "semantic_failed", error}: semantic search is off for good, keyword search goes on
//
// Every data file is checked against the sha256 the manifest gives it before it is used (Web Crypto for
// the files fetched at start, the core's hashlib for paper texts read later, synchronously): a damaged
// or tampered file must fail loudly, never give silent garbage. Errors reach the page as one line; the
// details (a Python traceback, say) go to the console only.

import { Checksums, GZIP, Progress, download, fetchBytes, loadManifest } from "./download.js";

const nativeFetch = self.fetch.bind(self);
let config;
let core; // the readingroom_core.browser module
let site; // readingroom_core.browser.Site: the worker's one handle on the search core
let checksums; // the manifest's sha256 of every data file (download.js Checksums)
let gzippedRuntime = new Set(); // runtime URLs with a .gz copy (config.gzipped)
let semanticReady = false;
let stage = "starting";
const prefetched = new Map(); // site path -> bytes fetched ahead, handed to Python once
// When each start-up step finished, in epoch ms (performance.timeOrigin differs between page and worker).
const timeline = {};
let pythonStart = null; // "snapshot" when restored from the build's snapshot, "boot" when Python booted
let resolveKeyword;
const keywordReady = new Promise((resolve) => (resolveKeyword = resolve));

const progress = new Progress((kinds) => {
  const message = { type: "progress", source: "search", stage, kinds, timeline: { ...timeline } };
  self.postMessage({ ...message, python_start: pythonStart });
});

function mark(step) {
  timeline[step] = performance.timeOrigin + performance.now();
}

function setStage(text) {
  stage = text;
  progress.report(true);
}

function counter(kind) {
  return (n) => progress.count(kind, n);
}

async function prefetch(path, kind) {
  prefetched.set(path, await checksums.fetch(config.base, path, counter(kind)));
}

// One line for the visitor: a Python error's message is its whole traceback, whose last line says what.
function oneLine(error) {
  const text = String(error && error.message ? error.message : error);
  const lines = text.split("\n").map((line) => line.trim()).filter(Boolean);
  const last = lines.length ? lines[lines.length - 1] : "unknown error";
  return last.length > 300 ? last.slice(0, 297) + "..." : last;
}

// The engine reads lazily (a paper's text when one of its passages is shown) and synchronously, as
// Python does; a worker may block on a synchronous request, the page never does.
function readSync(path) {
  const ahead = prefetched.get(path);
  if (ahead) {
    prefetched.delete(path);
    return ahead;
  }
  const gzipped = checksums.expected.has(path + GZIP); // its .gz copy, gunzipped by the core (zlib)
  const request = new XMLHttpRequest();
  request.open("GET", config.base + path + (gzipped ? GZIP : ""), false);
  request.responseType = "arraybuffer";
  request.send();
  if (request.status !== 200) throw new Error(`${path}${gzipped ? GZIP : ""}: HTTP ${request.status}`);
  progress.count("text", request.response.byteLength);
  let bytes = new Uint8Array(request.response);
  if (gzipped) {
    try {
      bytes = core.gunzipped(bytes);
    } catch (error) {
      console.error(`${path}${GZIP}:`, error);
      throw new Error(`${path}${GZIP} could not be decompressed; the site's data is damaged`);
    }
  }
  checksums.check(path, core.sha256_hex(bytes));
  return bytes;
}

// Modules come in through import(), which no wrapper sees: their sizes are read from resource timing.
function countModules(prefix, kind) {
  for (const entry of performance.getEntriesByType("resource")) {
    if (entry.name.startsWith(prefix) && entry.name.endsWith(".mjs")) progress.count(kind, entry.decodedBodySize);
  }
}

// Pyodide fetches its own files (pyodide.asm.wasm, python_stdlib.zip, pyodide-lock.json): while it
// starts, the worker's fetch hands it their .gz copies decompressed, and counts the bytes as they come.
// Each is downloaded once: a second start (booting after the snapshot was cancelled or refused) gets a
// copy of the same download. `fetched` resolves when the files keyword search waits for are all in.
function pythonFiles(pyodideRoot) {
  const waited = ["pyodide.asm.wasm", "python_stdlib.zip"];
  const arrived = new Map(waited.map((name) => [name, Promise.withResolvers()]));
  const downloads = new Map(); // url -> a promise of its Response, never read itself: each start gets a clone
  async function downloadForPython(url, name) {
    const done = () => arrived.get(name)?.resolve();
    const gzipped = gzippedRuntime.has(url);
    const { response, body } = await download(url, { gzipped, count: counter("pyodide"), done });
    const type = name.endsWith(".wasm") ? "application/wasm" : response.headers.get("Content-Type");
    return new Response(body, { headers: { "Content-Type": type || "application/octet-stream" } });
  }
  async function fetchForPython(resource, init) {
    const url = new URL(resource instanceof Request ? resource.url : resource, self.location.href).href;
    if (!url.startsWith(pyodideRoot)) return nativeFetch(resource, init);
    if (!downloads.has(url)) downloads.set(url, downloadForPython(url, url.slice(pyodideRoot.length)));
    return (await downloads.get(url)).clone();
  }
  const fetched = Promise.all([...arrived.values()].map((deferred) => deferred.promise));
  return { fetchForPython, fetched, forget: () => downloads.clear() };
}

// --- Python start-up from the build's memory snapshot ---------------------------------------------------
// Booting Python and importing the core takes about 2 s of a first visit on a busy 2-core machine; the
// build ships a memory snapshot of that interpreter, made by Node from the same Pyodide and core wheel
// (wasm/node/python_snapshot.mjs), and restoring it takes a fraction of that. Its hashed name changes
// with the wheel or Pyodide; Pyodide itself refuses a snapshot of another build. Anything wrong with it
// (missing, damaged, refused) means booting Python from the wheel, as a site without one would.
// The core's modules are in the restored memory but not on its disk; importing the browser boundary
// imports them all (readingroom_core/browser.py), so the restored interpreter lacks none.
const CORE_BOUNDARY = "readingroom_core.browser";
// The snapshot is about 6.4 MB more to download (gzipped), which a slow line takes longer to bring than
// Python takes to boot: at 20 Mbit/s it made keyword search 0.4 s later and semantic search 3.7 s
// (bench_browser, 112 papers). So it gets SNAPSHOT_CHECK_MS from its first byte; if its pace by then
// says the rest would take more than SNAPSHOT_BUDGET_MS, it is cancelled and Python boots.
const SNAPSHOT_CHECK_MS = 150;
const SNAPSHOT_BUDGET_MS = 1000;
const SNAPSHOT_TOO_SLOW = new Error("the line is too slow for the Python snapshot to pay");

/** A promise of the snapshot's bytes; it rejects with SNAPSHOT_TOO_SLOW when the download was cancelled. */
function fetchSnapshot(url) {
  const cancel = new AbortController();
  let received = 0;
  const count = (n) => ((received += n), progress.count("pyodide", n));
  const fetched = download(url, { gzipped: gzippedRuntime.has(url), count, signal: cancel.signal });
  fetched.then(async ({ response }) => {
    const size = Number(response.headers.get("Content-Length")) || 0;
    await new Promise((resolve) => setTimeout(resolve, SNAPSHOT_CHECK_MS));
    if ((SNAPSHOT_CHECK_MS * size) / Math.max(received, 1) > SNAPSHOT_BUDGET_MS) cancel.abort(SNAPSHOT_TOO_SLOW);
  }, () => {});
  return fetched.then(async ({ body }) => new Uint8Array(await new Response(body).arrayBuffer()));
}

/** The core's browser module, from the snapshot or else from a booted Python. */
async function startPython(snapshot, pyodideRoot) {
  const { loadPyodide } = await import(pyodideRoot + "pyodide.mjs");
  mark("pyodide_imported");
  try {
    const pyodide = await loadPyodide({ indexURL: pyodideRoot, _loadSnapshot: snapshot });
    mark("python_started");
    const core = pyodide.pyimport(CORE_BOUNDARY); // a restore that lost the core fails here, not later
    pythonStart = "snapshot";
    return started(core, pyodideRoot);
  } catch (error) {
    if (error !== SNAPSHOT_TOO_SLOW) console.warn("The Python snapshot did not restore; booting Python instead:", error);
  }
  const wheel = fetchBytes(config.wheel, { count: counter("runtime") });
  const pyodide = await loadPyodide({ indexURL: pyodideRoot });
  pythonStart = "boot";
  mark("python_started");
  const sitePackages = pyodide.runPython("import sysconfig; sysconfig.get_path('purelib')");
  pyodide.unpackArchive(await wheel, "wheel", { extractDir: sitePackages });
  pyodide.runPython("import importlib; importlib.invalidate_caches()");
  return started(pyodide.pyimport(CORE_BOUNDARY), pyodideRoot);
}

function started(core, pyodideRoot) {
  mark("core_installed");
  countModules(pyodideRoot, "pyodide");
  return core;
}

// Everything downloads from the start, keyword search's files first: Python and its snapshot, the
// manifest and the keyword index; the encoder, ONNX Runtime and the vectors as soon as those are in
// (or keyword search is up), so that on a slow line they never share its bandwidth. ONNX Runtime starts
// in the encoder's worker (encoder.js): its downloads while Python boots here, its session while this
// worker reads the vectors.
async function start() {
  setStage("Loading the Python runtime and the keyword index");
  gzippedRuntime = new Set(config.gzipped.map((url) => new URL(url, self.location.href).href));
  const pyodideRoot = new URL(config.pyodide, self.location.href).href;
  const python = pythonFiles(pyodideRoot);
  self.fetch = python.fetchForPython;
  const manifest = loadManifest(config.manifest).then(({ text, manifest }) => {
    checksums = new Checksums(manifest);
    progress.count("data", text.length);
    return { text, files: manifest.files };
  });
  const indexFiles = manifest.then(({ files }) =>
    Promise.all([prefetch(files.papers, "data"), prefetch(files.chunks, "data"), prefetch(files.postings, "data")]),
  );
  indexFiles.then(() => mark("keyword_data_fetched"), () => {});
  const snapshot = fetchSnapshot(new URL(config.python_snapshot, self.location.href).href);
  const snapshotFetched = snapshot.catch(() => {}); // failed or cancelled: Python boots instead
  const keywordFetched = Promise.all([indexFiles, snapshotFetched, python.fetched]);
  keywordFetched.then(() => mark("keyword_files_fetched"), () => {});
  const semantic = Promise.all([manifest, Promise.race([keywordFetched, keywordReady])]).then(([{ files }]) =>
    startSemantic(files),
  );
  semantic.catch(() => {}); // reported once keyword search is up (below)
  [core] = await Promise.all([startPython(snapshot, pyodideRoot), manifest, indexFiles]);
  self.fetch = nativeFetch;
  python.forget();
  setStage("Starting keyword search");
  const { text } = await manifest;
  site = core.open_site(readSync, text);
  mark("keyword_ready");
  encoder.postMessage({ type: "session" }); // not before: Python's boot would share its core
  resolveKeyword();
  self.postMessage({ type: "ready", which: "keyword" });
  if (!semanticReady) setStage("Loading the semantic model and vectors");
  return { semantic }; // wrapped: an async function returning a promise would wait for it
}

async function startSemantic(files) {
  encoder.postMessage({ type: "go" });
  const semanticFiles = Promise.all([
    prefetch(files.vectors, "vectors"),
    prefetch(files.vocab, "model"),
    prefetch(files.char_classes, "model"),
  ]);
  await Promise.all([semanticFiles, keywordReady]);
  mark("semantic_data_fetched");
  site.load_semantic(); // also checks the graph's structure (readingroom_core/hnsw.py check_graph)
  const typedRowProducts = useTypedRowProducts();
  mark("vectors_loaded");
  const { checksums_ms } = await encoderStarted;
  semanticReady = true;
  mark("semantic_ready");
  progress.stop();
  setStage("ready");
  self.postMessage({
    type: "ready",
    which: "semantic",
    checksums_ms: checksums.ms + checksums_ms,
    row_products: typedRowProducts,
  });
}

// --- the query encoder's worker ------------------------------------------------------------------------

let encoder; // the port to encoder.js: ONNX Runtime Web and the encoder session, on a core of their own
const embeddings = new Map(); // request id -> {resolve, reject}
let nextEmbedding = 1;
let encoderStarted; // resolves with the encoder's start-up report, rejects with why it failed

function listenToEncoder(port) {
  encoder = port;
  let started, failed;
  encoderStarted = new Promise((resolve, reject) => ((started = resolve), (failed = reject)));
  encoderStarted.catch(() => {}); // awaited once the vectors are in
  encoder.onmessage = ({ data }) => {
    if (data.type === "started") started(data);
    else if (data.type === "failed") encoderFailed(new Error(data.error));
    else if (data.type === "vector") {
      const { resolve, reject } = embeddings.get(data.id);
      embeddings.delete(data.id);
      if (data.error) reject(new Error(data.error));
      else resolve(data.vector);
    }
  };
  function encoderFailed(error) {
    failed(error);
    for (const { reject } of embeddings.values()) reject(error);
    embeddings.clear();
  }
  return encoderFailed;
}

// The HNSW search's integer dot products with typed arrays (readingroom_core/browser.py
// use_text_row_products): exact, so the core ranks as it would alone, at 2-4 µs a row on a loaded 2-core
// machine instead of the 20-45 µs of Pyodide's math.sumprod. Numbers cross as comma-separated text.
function rowProducts(rowsProxy) {
  const bytes = rowsProxy.toJs();
  rowsProxy.destroy();
  const rows = new Int8Array(bytes.buffer, bytes.byteOffset, bytes.length);
  return (queryText) => {
    const query = Int32Array.from(queryText.split(","), Number);
    const dims = query.length;
    return (slotsText) => {
      const slots = slotsText.split(",");
      const products = new Array(slots.length);
      for (let j = 0; j < slots.length; j++) {
        const at = Number(slots[j]) * dims;
        let sum = 0;
        for (let i = 0; i < dims; i++) sum += query[i] * rows[at + i];
        products[j] = sum;
      }
      return products.join(",");
    };
  };
}

// Whether the typed-array products are in use; if the core refuses them (it checks them against its own),
// the search stays correct with Python's, only slower.
function useTypedRowProducts() {
  try {
    site.use_text_row_products(rowProducts(site.vector_rows()));
    return true;
  } catch (error) {
    console.error("The HNSW search computes its dot products in Python:", error);
    return false;
  }
}

// The latest query vectors, by the token ids the encoder read: a query searched again (submitted after
// the search-as-you-type, "More results", another filter or mode, Ask on the same text) skips the encoder,
// which takes most of a hybrid query's time. Same ids, same vector, so results are unchanged.
const VECTOR_CACHE_SIZE = 64;
const vectorCache = new Map(); // ids joined by "," -> vector; in order of use, the oldest first

// {vector (null when the query has no words for the encoder), cached: whether it came from the cache}
async function embed(query) {
  const idsProxy = site.encode_ids(query);
  const ids = idsProxy.toJs();
  idsProxy.destroy();
  if (!ids.length) return { vector: null, cached: false };
  const key = ids.join(",");
  let vector = vectorCache.get(key);
  const cached = vector !== undefined;
  if (cached) {
    vectorCache.delete(key); // re-inserted below: the most recently used
  } else {
    const id = nextEmbedding++;
    const embedding = new Promise((resolve, reject) => embeddings.set(id, { resolve, reject }));
    encoder.postMessage({ type: "embed", id, ids });
    vector = Array.from(await embedding);
    if (vectorCache.size >= VECTOR_CACHE_SIZE) vectorCache.delete(vectorCache.keys().next().value);
  }
  vectorCache.set(key, vector);
  return { vector, cached };
}

let semanticError = null; // why semantic search is off for good (a failed load or query)

function semanticFailed(error) {
  console.error("Semantic search is off; keyword search goes on:", error);
  semanticReady = false;
  semanticError = oneLine(error);
  self.postMessage({ type: "semantic_failed", error: semanticError });
}

// A task boundary: the encoder's reply, if it has come, is handled before the caller goes on.
function nextTask() {
  const { port1, port2 } = new MessageChannel();
  return new Promise((resolve) => {
    port1.onmessage = () => (port1.close(), resolve());
    port2.postMessage(null);
  });
}

// While the encoder's worker embeds the query on the other core, this one does the part of the search
// that needs no vector (parsing, filters, the keyword ranking: readingroom_core/browser.py Site.prepare)
// and reads the text files of the papers its best keyword matches come from, most of which the results
// will show; it stops reading as soon as the vector is in. Returns how many it read. A read that fails
// here is not reported: the search reads that file again if it shows one of its passages, and fails then.
async function readAhead(request, embedding) {
  let embedded = false;
  embedding.then(() => (embedded = true), () => (embedded = true));
  let read = 0;
  try {
    for (const paper of JSON.parse(site.prepare(JSON.stringify(request)))) {
      await nextTask();
      if (embedded) break;
      site.read_paper_text(paper);
      read++;
    }
  } catch (error) {
    console.warn("Reading ahead stopped:", error);
  }
  return read;
}

async function search({ id, query, k, mode, filters }) {
  await keywordReady;
  if (mode === "dense" && !semanticReady) {
    const why = semanticError ? "is unavailable on this site" : "is still loading";
    return { id, error: `Semantic search ${why}; use keyword or hybrid mode.` };
  }
  const request = { query, k, mode, filters };
  const keywordOnly = () => JSON.parse(site.search(JSON.stringify({ ...request, vector: null })));
  const started = performance.now();
  let embedded = started; // the core's time after the vector is timed apart from the embedding's
  const ahead = { ahead_ms: 0, texts_ahead: 0 }; // the work done while the query was embedded
  let vector = null;
  let cached = false;
  let reply;
  if (semanticReady && mode !== "bm25") {
    try {
      const embedding = embed(query);
      ahead.texts_ahead = await readAhead(request, embedding);
      ahead.ahead_ms = performance.now() - started;
      ({ vector, cached } = await embedding);
      embedded = performance.now();
      reply = JSON.parse(site.search(JSON.stringify({ ...request, vector })));
    } catch (error) {
      reply = keywordOnly(); // throws when keyword search fails too: then the fault is not the semantic side's
      semanticFailed(error);
      vector = null;
      if (mode === "dense") return { id, error: "Semantic search is unavailable on this site; use keyword or hybrid mode." };
    }
  }
  if (!reply) reply = keywordOnly();
  const timings = { embed_ms: embedded - started, search_ms: performance.now() - embedded, ...ahead };
  if (vector) timings.vector_cached = cached;
  return { id, ...reply, semantic: vector !== null, timings };
}

// Ask mode: the evidence for a question (sources, page texts and the prompt, fitted to the token budget)
// and the verdict on an answer's citations, from the core through the browser boundary; the provider
// call itself is the page's.
async function evidence({ id, question, history, budget }) {
  await keywordReady;
  const request = { question, history, budget };
  const vector = semanticReady ? (await embed(site.ask_retrieval_query(JSON.stringify(request)))).vector : null;
  return { id, ...JSON.parse(site.ask_evidence(JSON.stringify({ ...request, vector }))) };
}

async function verify({ id, answer, evidence }) {
  await keywordReady;
  return { id, ...JSON.parse(site.verify_answer(JSON.stringify({ answer, evidence }))) };
}

const REQUESTS = { search, evidence, verify };

let encoderFailed; // (error) -> void: the encoder's worker is gone

self.onmessage = async ({ data }) => {
  if (data.type === "init") {
    mark("worker_started");
    config = data.config;
    encoderFailed = listenToEncoder(data.port);
    let semantic;
    try {
      ({ semantic } = await start());
    } catch (error) {
      console.error("Search could not start:", error);
      self.postMessage({ type: "failed", error: oneLine(error), stage });
      return;
    }
    try {
      await semantic;
    } catch (error) {
      progress.stop();
      semanticFailed(error);
    }
  } else if (data.type === "encoder_failed") {
    encoderFailed(new Error(data.error));
  } else if (REQUESTS[data.type]) {
    let reply;
    try {
      reply = await REQUESTS[data.type](data);
    } catch (error) {
      console.error(`${data.type} failed:`, error);
      reply = { id: data.id, error: oneLine(error) };
    }
    self.postMessage({ type: "result", ...reply });
  }
};
