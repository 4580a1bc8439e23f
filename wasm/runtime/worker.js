// The search engine's thread: Pyodide runs the readingroom_core package (keyword search first), then
// ONNX Runtime Web embeds queries (semantic search). Every file comes from the site's own origin.
//
// Messages in:  {type: "init", config}, {type: "search", id, query, k, mode, filters},
//               {type: "evidence", id, question, history, budget}, {type: "verify", id, answer, evidence: {sources, pages}}
// Messages out: {type: "progress", stage, bytes, kinds, timeline, python_start},
//               {type: "ready", which: "keyword"|"semantic"}, {type: "timeline", timeline},
//               {type: "result", id, hits, semantic} | {type: "result", id, error}, {type: "failed", error},
//               {type: "semantic_failed", error}: semantic search is off for good, keyword search goes on
//
// Every data file is checked against the sha256 the manifest gives it before it is used (Web Crypto for
// the files fetched at start, the core's hashlib for paper texts read later, synchronously): a damaged
// or tampered file must fail loudly, never give silent garbage. Errors reach the page as one line; the
// details (a Python traceback, say) go to the console only.

const PROGRESS_INTERVAL_MS = 200;
let config;
let core; // the readingroom_core.browser module
let site; // readingroom_core.browser.Site: the worker's one handle on the search core
const expectedSha256 = new Map(); // site path -> sha256 hex, from the manifest's artifacts
let verifyMs = 0; // time spent checking checksums at start-up (reported in the timeline)
let ort;
let session;
let semanticReady = false;
let stage = "starting";
const kinds = {}; // bytes loaded, by kind of file
const prefetched = new Map(); // site path -> bytes fetched ahead, handed to Python once
// When each start-up step finished, in epoch ms (performance.timeOrigin differs between page and worker).
const timeline = {};
let pythonStart = null; // "snapshot" when restored from this browser's saved interpreter, else "boot"
let lastProgress = 0;
let resolveKeyword;
const keywordReady = new Promise((resolve) => (resolveKeyword = resolve));

function totalBytes() {
  return Object.values(kinds).reduce((sum, n) => sum + n, 0);
}

function reportProgress(force = false) {
  const now = performance.now();
  if (!force && now - lastProgress < PROGRESS_INTERVAL_MS) return;
  lastProgress = now;
  const message = { type: "progress", stage, bytes: totalBytes(), kinds: { ...kinds }, timeline: { ...timeline } };
  self.postMessage({ ...message, python_start: pythonStart });
}

function mark(step) {
  timeline[step] = performance.timeOrigin + performance.now();
}

function setStage(text) {
  stage = text;
  reportProgress(true);
}

function count(kind, n) {
  kinds[kind] = (kinds[kind] || 0) + n;
  reportProgress();
}

async function fetchBytes(url, kind) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  const parts = [];
  let length = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    length += value.length;
    count(kind, value.length);
  }
  const bytes = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.length;
  }
  return bytes;
}

function hex(buffer) {
  return Array.from(new Uint8Array(buffer), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

function checkDigest(path, actual) {
  const expected = expectedSha256.get(path);
  if (expected === undefined) throw new Error(`${path} is not listed in manifest.json; the site is damaged`);
  if (actual !== expected) {
    throw new Error(`${path} does not match its checksum in manifest.json; the site's data is damaged`);
  }
}

async function verified(path, bytes) {
  const started = performance.now();
  checkDigest(path, hex(await crypto.subtle.digest("SHA-256", bytes)));
  verifyMs += performance.now() - started;
  return bytes;
}

async function prefetch(path, kind) {
  prefetched.set(path, await verified(path, await fetchBytes(config.base + path, kind)));
}

// One line for the visitor: a Python error's message is its whole traceback, whose last line says what.
function oneLine(error) {
  const text = String(error && error.message ? error.message : error);
  const lines = text.split("\n").map((line) => line.trim()).filter(Boolean);
  const last = lines.length ? lines[lines.length - 1] : "unknown error";
  return last.length > 300 ? last.slice(0, 297) + "..." : last;
}

async function loadManifest() {
  let response;
  try {
    response = await fetch(config.manifest, { cache: "no-cache" });
  } catch {
    throw new Error("manifest.json could not be fetched; check the connection and reload");
  }
  if (!response.ok) throw new Error(`manifest.json is missing (HTTP ${response.status}); the site is not fully published`);
  const text = await response.text();
  let manifest;
  try {
    manifest = JSON.parse(text);
  } catch {
    throw new Error("manifest.json is damaged (not JSON); rebuild and publish the site again");
  }
  for (const artifact of manifest.artifacts || []) expectedSha256.set(artifact.path, artifact.sha256);
  count("data", text.length);
  return text;
}

// The engine reads lazily (a paper's text when one of its passages is shown) and synchronously, as
// Python does; a worker may block on a synchronous request, the page never does.
function readSync(path) {
  const ahead = prefetched.get(path);
  if (ahead) {
    prefetched.delete(path);
    return ahead;
  }
  const request = new XMLHttpRequest();
  request.open("GET", config.base + path, false);
  request.responseType = "arraybuffer";
  request.send();
  if (request.status !== 200) throw new Error(`${path}: HTTP ${request.status}`);
  count("text", request.response.byteLength);
  const bytes = new Uint8Array(request.response);
  checkDigest(path, core.sha256_hex(bytes));
  return bytes;
}

function countResources(prefix, kind) {
  for (const entry of performance.getEntriesByType("resource")) {
    if (entry.name.startsWith(prefix)) kinds[kind] = (kinds[kind] || 0) + entry.decodedBodySize;
  }
}

// --- Python start-up from a memory snapshot ----------------------------------------------------------
// Booting Python takes about 2 s even from the HTTP cache; restoring a memory snapshot of an interpreter
// that has already imported the core, read back from IndexedDB, about 0.6 s. It is made in this browser on the
// first visit and kept in IndexedDB, one per site, under a key naming the Pyodide folder and the
// content-hashed core wheel, so a new build or Pyodide version never restores a stale interpreter.
// Anything wrong with it (no IndexedDB, a failed restore) just means booting Python as before.
const SNAPSHOT_DB = "readingroom-python";
const SNAPSHOT_STORE = "snapshots";
// The browser boundary; importing it imports every module of the core (readingroom_core/browser.py),
// so a restored interpreter, which has them in memory but not on disk, lacks none.
const CORE_IMPORTS = "import readingroom_core.browser";
let snapshotToSave = null;

function snapshotKey() {
  return `${config.pyodide} ${config.wheel}`;
}

function snapshotRequest(mode, act) {
  return new Promise((resolve, reject) => {
    const opening = indexedDB.open(SNAPSHOT_DB, 1);
    opening.onupgradeneeded = () => opening.result.createObjectStore(SNAPSHOT_STORE);
    opening.onerror = () => reject(opening.error);
    opening.onsuccess = () => {
      const db = opening.result;
      const transaction = db.transaction(SNAPSHOT_STORE, mode);
      const request = act(transaction.objectStore(SNAPSHOT_STORE));
      transaction.oncomplete = () => (db.close(), resolve(request.result));
      transaction.onerror = transaction.onabort = () => (db.close(), reject(transaction.error));
    };
  });
}

async function savedSnapshot() {
  try {
    const saved = await snapshotRequest("readonly", (store) => store.get(config.base));
    return saved && saved.key === snapshotKey() ? saved.bytes : null;
  } catch {
    return null;
  }
}

async function saveSnapshot() {
  if (!snapshotToSave) return;
  const bytes = snapshotToSave;
  snapshotToSave = null;
  try {
    await snapshotRequest("readwrite", (store) => store.put({ key: snapshotKey(), bytes }, config.base));
    mark("python_snapshot_saved");
    self.postMessage({ type: "timeline", timeline: { ...timeline } });
  } catch {
    // Storage full or refused (private browsing): the next visit boots Python, as this one did.
  }
}

async function startPython(fetchWheel) {
  const pyodideRoot = new URL(config.pyodide, self.location.href).href;
  const [{ loadPyodide }, snapshot] = await Promise.all([import(pyodideRoot + "pyodide.mjs"), savedSnapshot()]);
  if (snapshot) {
    try {
      const pyodide = await loadPyodide({ indexURL: pyodideRoot, _loadSnapshot: snapshot });
      pythonStart = "snapshot";
      mark("python_started");
      countResources(pyodideRoot, "pyodide");
      mark("core_installed");
      return pyodide;
    } catch {
      await snapshotRequest("readwrite", (store) => store.delete(config.base)).catch(() => {});
    }
  }
  const wheel = fetchWheel();
  const pyodide = await loadPyodide({ indexURL: pyodideRoot, _makeSnapshot: true });
  pythonStart = "boot";
  mark("python_started");
  countResources(pyodideRoot, "pyodide");
  const sitePackages = pyodide.runPython("import sysconfig; sysconfig.get_path('purelib')");
  pyodide.unpackArchive(await wheel, "wheel", { extractDir: sitePackages });
  pyodide.runPython("import importlib; importlib.invalidate_caches()");
  pyodide.runPython(CORE_IMPORTS);
  // Taken before any JavaScript object enters Python (a snapshot cannot hold one); saved once idle.
  snapshotToSave = pyodide.makeMemorySnapshot();
  mark("core_installed");
  return pyodide;
}

// Python, the core wheel, the manifest and the keyword index all download at once.
async function startKeyword() {
  setStage("Loading the Python runtime and the keyword index");
  const manifestText = loadManifest();
  const indexFiles = manifestText.then((text) => {
    const { files } = JSON.parse(text);
    return Promise.all([prefetch(files.papers, "data"), prefetch(files.chunks, "data"), prefetch(files.postings, "data")]);
  }).then(() => mark("keyword_data_fetched"));
  const fetchWheel = () => fetchBytes(config.wheel, "runtime");
  const [pyodide, text] = await Promise.all([startPython(fetchWheel), manifestText, indexFiles]);
  setStage("Starting keyword search");
  core = pyodide.pyimport("readingroom_core.browser");
  site = core.open_site(readSync, text);
  mark("keyword_ready");
  resolveKeyword();
  self.postMessage({ type: "ready", which: "keyword" });
  return JSON.parse(text);
}

async function startSemantic(manifest) {
  setStage("Loading the semantic model and vectors");
  const { files } = manifest;
  const [model] = await Promise.all([
    fetchBytes(config.base + files.encoder, "model").then((bytes) => verified(files.encoder, bytes)),
    prefetch(files.vectors, "vectors"),
    prefetch(files.vocab, "model"),
    prefetch(files.char_classes, "model"),
    import(config.ort).then((module) => (ort = module)),
  ]);
  mark("semantic_data_fetched");
  countResources(new URL(config.ort, self.location.href).href, "runtime");
  ort.env.wasm.wasmPaths = config.ort_wasm;
  ort.env.wasm.numThreads = 1; // no cross-origin isolation on static hosts, so no shared memory
  // Dequantise the int8 weights once at load, as the CLI does (builder/stages/encoder.py DEQUANTIZE_AT_LOAD):
  // otherwise every run dequantises all of them again, about 3x slower.
  session = await ort.InferenceSession.create(model, {
    executionProviders: ["wasm"],
    extra: { session: { disable_quant_qdq: "1" } },
  });
  countResources(new URL(config.ort_wasm.wasm, self.location.href).href, "runtime");
  mark("encoder_started");
  site.load_semantic(); // also checks the graph's structure (readingroom_core/hnsw.py check_graph)
  const typedRowProducts = useTypedRowProducts();
  mark("semantic_ready");
  semanticReady = true;
  setStage("ready");
  self.postMessage({ type: "ready", which: "semantic", checksums_ms: verifyMs, row_products: typedRowProducts });
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
    const shape = [1, ids.length];
    const feeds = {
      input_ids: new ort.Tensor("int64", BigInt64Array.from(ids, BigInt), shape),
      attention_mask: new ort.Tensor("int64", new BigInt64Array(ids.length).fill(1n), shape),
    };
    const outputs = await session.run(feeds);
    vector = Array.from(outputs[session.outputNames[0]].data);
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

async function search({ id, query, k, mode, filters }) {
  await keywordReady;
  if (mode === "dense" && !semanticReady) {
    const why = semanticError ? "is unavailable on this site" : "is still loading";
    return { id, error: `Semantic search ${why}; use keyword or hybrid mode.` };
  }
  const keywordOnly = () => JSON.parse(site.search(JSON.stringify({ query, k, mode, filters, vector: null })));
  const started = performance.now();
  let embedded = started; // the core's time is timed apart from the query embedding's
  let vector = null;
  let cached = false;
  let reply;
  if (semanticReady && mode !== "bm25") {
    try {
      ({ vector, cached } = await embed(query));
      embedded = performance.now();
      reply = JSON.parse(site.search(JSON.stringify({ query, k, mode, filters, vector })));
    } catch (error) {
      reply = keywordOnly(); // throws when keyword search fails too: then the fault is not the semantic side's
      semanticFailed(error);
      vector = null;
      if (mode === "dense") return { id, error: "Semantic search is unavailable on this site; use keyword or hybrid mode." };
    }
  }
  if (!reply) reply = keywordOnly();
  const timings = { embed_ms: embedded - started, search_ms: performance.now() - embedded };
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

self.onmessage = async ({ data }) => {
  if (data.type === "init") {
    mark("worker_started");
    config = data.config;
    let manifest;
    try {
      manifest = await startKeyword();
    } catch (error) {
      console.error("Search could not start:", error);
      self.postMessage({ type: "failed", error: oneLine(error), stage });
      return;
    }
    try {
      await startSemantic(manifest);
    } catch (error) {
      semanticFailed(error);
    }
    await saveSnapshot();
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
