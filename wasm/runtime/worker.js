// The search engine's thread: Pyodide runs the readingroom_core package (keyword search first); the
// query encoder runs in a worker of its own (encoder.js), reached through a port the page hands over.
// Every file comes from the site's own origin. Messages and the Python boundary: protocol.js.
//
// Every data file is checked against the sha256 the manifest gives it before it is used (Web Crypto for
// the files fetched at start, the core's hashlib for paper texts read later, synchronously); the index
// files a query reads by range are checked block by block by the core (readingroom_core/ranges.py)
// against the directories the manifest checked: a damaged or tampered file must fail loudly, never give
// silent garbage. Errors reach the page as one line; the
// details (a Python traceback, say) go to the console only.

import { Checksums, GZIP, Progress, loadManifest } from "./download.js";
import { Encoder } from "./embedding.js";
import { countModules, fetchSnapshot, pythonFiles, startPython } from "./python_start.js";
import { RangedReads } from "./ranged_reads.js";

/** @typedef {import("./protocol.js").AppConfig} AppConfig */
/** @typedef {import("./protocol.js").Core} Core */
/** @typedef {import("./protocol.js").Site} Site */
/** @typedef {import("./protocol.js").FromSearchWorker} FromSearchWorker */
/** @typedef {import("./protocol.js").ToSearchWorker} ToSearchWorker */
/** @typedef {import("./protocol.js").SearchMessage} SearchMessage */
/** @typedef {import("./protocol.js").SearchReply} SearchReply */

const nativeFetch = self.fetch.bind(self);
/** @type {AppConfig} */
let config;
/** @type {Core} the readingroom_core.browser module */
let core;
/** @type {Site} the worker's one handle on the search core */
let site;
/** @type {Checksums} the manifest's sha256 of every data file */
let checksums;
/** @type {Encoder} */
let encoder;
/** @type {RangedReads} what a step of the core reads by range, fetched in batches */
let reads;
let semanticReady = false;
let semanticError = null; // why semantic search is off for good (a failed load or query)
let stage = "starting";
const prefetched = new Map(); // site path -> bytes fetched ahead, handed to Python once
// When each start-up step finished, in epoch ms (performance.timeOrigin differs between page and worker).
const timeline = {};
/** @type {"snapshot" | "boot" | null} */
let pythonStart = null;
/** @type {() => number} */
let pythonMemory = () => 0;
const keyword = Promise.withResolvers();
let keywordUp = false;
/** @type {Promise<unknown>[]} the searches asked before keyword search was up, until they are answered */
const earlySearches = [];
/** @type {string[] | null} the index files to fetch whole once searches pause; null: not chosen yet */
let wholeIndex = null;
const wholeAtStart = new Set(); // the index files start-up fetches whole
let requestsUnderWay = 0;
let lastRequestEnded = 0; // performance.now()

/** @param {FromSearchWorker} message */
function post(message) {
  self.postMessage(message);
}

const progress = new Progress((kinds) => {
  post({ type: "progress", source: "search", stage, kinds, timeline: { ...timeline }, python_start: pythonStart });
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

// The engine reads a whole file synchronously, as Python does, where the worker has not fetched it ahead;
// a worker may block on a synchronous request, the page never does.
/** @param {string} path @returns {Uint8Array} */
function readSync(path) {
  const ahead = prefetched.get(path);
  if (ahead) {
    prefetched.delete(path);
    return ahead;
  }
  // Checked here against the manifest (from its .gz copy where it has one, gunzipped by the core's zlib).
  const gzipped = checksums.expected.has(path + GZIP);
  const request = new XMLHttpRequest();
  request.open("GET", config.base + path + (gzipped ? GZIP : ""), false);
  request.responseType = "arraybuffer";
  request.send();
  if (request.status !== 200) throw new Error(`${path}${gzipped ? GZIP : ""}: HTTP ${request.status}`);
  progress.count("data", request.response.byteLength);
  let bytes = new Uint8Array(request.response);
  if (gzipped) {
    try {
      bytes = core.gunzipped(bytes);
    } catch (error) {
      console.error(`${path}${GZIP}:`, error);
      throw new Error(`${path}${GZIP} could not be decompressed; the site's data is damaged`, { cause: error });
    }
  }
  checksums.check(path, core.sha256_hex(bytes));
  return bytes;
}

// Downloads come in waves, each chosen so that a slow line (20 Mbit/s) brings keyword search up soonest:
// first Python's own files and the manifest; once Python's files are in, Python boots (seconds of this
// thread) while the keyword files come (the paper table, the chunk table, the postings directory and the
// forward index); then the encoder's worker fetches ONNX Runtime and the encoder (its session waits until
// keyword search is up); once the keyword files are in, the dense directory, the papers' vectors and the
// tokenizer's files, but only after the keyword results of the searches asked before keyword search was
// up (a link with a query, a visitor who typed while it loaded): those files would hold four of the
// browser's six connections to the host while the search's ranges queue. The rest of the index is read by
// range as queries need it (ranged_reads.js). 10,000 papers, 20 Mbit/s: the keyword files beside Python's,
// as before, held its boot back; this order brought the first keyword result from 10.3-11.0 s to 9.1-9.2 s,
// the first semantic one no later.
async function start() {
  setStage("Loading the Python runtime and the keyword index");
  const gzippedRuntime = new Set(config.gzipped.map((url) => new URL(url, self.location.href).href));
  const pyodideRoot = new URL(config.pyodide, self.location.href).href;
  const python = pythonFiles(pyodideRoot, gzippedRuntime, counter("pyodide"));
  self.fetch = python.fetchForPython;
  const manifest = loadManifest(config.manifest).then(({ text, manifest }) => {
    checksums = new Checksums(manifest);
    progress.count("data", text.length);
    return { text, files: manifest.files };
  });
  const pythonFetched = Promise.all([manifest, python.fetched]).then(([{ files }]) => files);
  const indexFiles = pythonFetched.then((files) =>
    Promise.all([
      prefetch(files.paper_table, "data"),
      prefetch(files.chunks, "data"),
      prefetch(files.postings, "data"),
      prefetch(files.text_dictionary, "data"),
    ]),
  );
  indexFiles.then(() => mark("keyword_data_fetched"), () => {});
  // The postings' forward index, which the first query of several words reads whole (10,000 papers:
  // 1.05 MB that, fetched by that query beside the encoder's download, held its first result 1.4 s on a
  // 20 Mbit/s line). Its ranges are then sliced from it; a failure here only leaves it to be read by range.
  const forwardIndex = pythonFetched
    .then(async (files) => {
      const path = files.forward_index;
      if (!path) return;
      wholeAtStart.add(path);
      reads.keepWhole(path, await checksums.fetch(config.base, path, counter("data")));
    })
    .catch((error) => console.warn("The forward index will be read by range:", error));
  const snapshotUrl = new URL(config.python_snapshot, self.location.href).href;
  const snapshot = fetchSnapshot(snapshotUrl, gzippedRuntime.has(snapshotUrl), counter("pyodide"));
  const snapshotFetched = snapshot.catch(() => {}); // failed or cancelled: Python boots instead
  const keywordFetched = Promise.all([indexFiles, snapshotFetched, python.fetched, forwardIndex]);
  keywordFetched.then(() => mark("keyword_files_fetched"), () => {});
  startEncoderAfter(pythonFetched, Promise.all([indexFiles, forwardIndex]));
  const semantic = Promise.all([manifest, Promise.race([keywordFetched, keyword.promise])]).then(
    async ([{ files }]) => {
      if (earlySearches.length) await keyword.promise.then(() => Promise.allSettled(earlySearches));
      return startSemantic(files);
    },
  );
  semantic.catch(() => {}); // reported once keyword search is up (below)
  const runtime = { snapshot, glue: python.glue, pyodideRoot, wheel: config.wheel, countWheel: counter("runtime") };
  const python_ = startPython({ ...runtime, mark });
  [{ core, pythonStart, memoryBytes: pythonMemory }] = await Promise.all([python_, manifest, indexFiles]);
  mark("core_installed");
  countModules(pyodideRoot, counter("pyodide"));
  self.fetch = nativeFetch;
  python.forget();
  setStage("Starting keyword search");
  site = core.open_site(readSync, (await manifest).text, reads.readRange, reads.announce);
  mark("keyword_ready");
  encoder.post({ type: "session" }); // not before: Python's boot would share its core
  keywordUp = true;
  keyword.resolve();
  post({ type: "ready", which: "keyword" });
  if (!semanticReady) setStage("Loading the semantic model and vectors");
  return { semantic }; // wrapped: an async function returning a promise would wait for it
}

// The encoder's worker's 12 MB (the encoder and ORT Web's wasm) wait for the keyword files (10,000 papers:
// 3.3 MB), which, shared with them (18 MB then), came 1.4 s later on a 20 Mbit/s line. Python's boot holds this thread as they come, so word that they are in
// reaches the encoder's worker up to a second late, the line idle meanwhile: it is also told, once Python's
// files are in, how long the keyword files should take at the rate Python's came, and starts at whichever
// comes first.
function startEncoderAfter(pythonFetched, keywordFetched) {
  pythonFetched.then((files) => {
    const keywordFiles = [files.paper_table, files.chunks, files.postings, files.forward_index, files.text_dictionary];
    const after_ms = progress.msFor(checksums.wireBytes(keywordFiles.filter(Boolean)));
    encoder.post({ type: "go", after_ms });
  }, () => {});
  const now = () => encoder.post({ type: "go", after_ms: 0 });
  keywordFetched.then(now, now);
}

async function startSemantic(files) {
  const semanticFiles = Promise.all([
    prefetch(files.dense, "vectors"),
    ...(files.paper_vectors ? [prefetch(files.paper_vectors, "vectors")] : []),
    prefetch(files.vocab, "model"),
    prefetch(files.char_classes, "model"),
    prefetch(files.word_pieces, "model"),
  ]);
  await Promise.all([semanticFiles, keyword.promise]);
  mark("semantic_data_fetched");
  site.load_semantic(); // the dense directory and the papers' vectors; lists and rows are read by range
  mark("vectors_loaded");
  const { checksums_ms } = await encoder.started;
  semanticReady = true;
  chooseWholeIndex();
  mark("semantic_ready");
  progress.stop();
  setStage("ready");
  const checked = checksums.ms + checksums_ms;
  post({ type: "ready", which: "semantic", checksums_ms: checked });
}

function semanticFailed(error) {
  console.error("Semantic search is off; keyword search goes on:", error);
  semanticReady = false;
  semanticError = oneLine(error);
  post({ type: "semantic_failed", error: semanticError });
}

/** The query's token ids for the encoder (field filters left out) and its vector. @param {string} query */
async function embed(query) {
  const idsProxy = site.encode_ids(query);
  const ids = Int32Array.from(idsProxy.toJs());
  idsProxy.destroy();
  return encoder.embed(ids, wordPieceRows);
}

/** The ids' rows of the encoder's word-piece table, read by range (a few blocks of 6 KB a query).
 * @param {Int32Array} ids @returns {Promise<Uint8Array>} */
async function wordPieceRows(ids) {
  const rowsProxy = await reads.run(() => site.word_piece_rows(JSON.stringify(Array.from(ids))));
  const rows = rowsProxy.toJs();
  rowsProxy.destroy();
  return rows;
}

const SEMANTIC_UNAVAILABLE = "Semantic search is unavailable on this site; use keyword or hybrid mode.";

/**
 * One search: parsed and keyword-ranked once (Site.prepare) while the encoder embeds the query, then
 * finished with the vector; keyword-only from the same prepared search when the semantic side fails.
 * @param {SearchMessage} message
 * @returns {Promise<SearchReply | {error: string}>}
 */
async function search({ query, k, mode, filters }) {
  await keyword.promise;
  if (mode === "dense" && !semanticReady) {
    return { error: semanticError ? SEMANTIC_UNAVAILABLE : "Semantic search is still loading; use keyword or hybrid mode." };
  }
  const started = performance.now();
  const request = JSON.stringify({ query, k, mode, filters });
  const embedding = semanticReady && mode !== "bm25" ? embed(query) : null; // the encoder starts first
  embedding?.catch(() => {}); // awaited below, unless the query is refused
  // The dense side's reads start once the vector is in, beside the keyword side's rounds rather than
  // after them; what fails there, search reports when it reads the same again.
  const denseAhead = embedding
    ?.then(({ vector }) => vector && reads.run(() => site.dense_ahead(request, vector)))
    .catch(() => {});
  const prepared = JSON.parse(await reads.run(() => site.prepare(request)));
  if ("error" in prepared) return prepared;
  try {
    return await finish(prepared, embedding, denseAhead, started);
  } finally {
    site.discard(prepared.search);
  }
}

/**
 * @param {{search: number, read_ahead: [string, number, number][]}} prepared
 * @param {Promise<{vector?: Float32Array, cached: boolean}> | null} embedding
 * @param {Promise<unknown> | undefined} denseAhead
 * @param {number} started
 */
async function finish(prepared, embedding, denseAhead, started) {
  const timings = { embed_ms: 0, search_ms: 0, ahead_ms: 0, texts_ahead: 0, python_memory_bytes: 0 };
  let embedded = started; // the core's time after the vector is timed apart from the embedding's
  let vector; // undefined, not null, for none: Pyodide hands JavaScript's null to Python as JsNull
  let reply;
  if (embedding) {
    try {
      timings.texts_ahead = reads.readAhead(prepared.read_ahead);
      timings.ahead_ms = performance.now() - started;
      let cached;
      ({ vector, cached } = await embedding);
      if (vector) timings.vector_cached = cached;
      embedded = performance.now();
      await denseAhead; // its blocks are read by then: search reads none of them twice
      reply = JSON.parse(await reads.run(() => site.search(prepared.search, vector)));
    } catch (error) {
      reply = JSON.parse(await reads.run(() => site.search(prepared.search))); // throws when keyword search fails too
      semanticFailed(error);
      vector = undefined;
      delete timings.vector_cached;
      if (reply.error) return { error: SEMANTIC_UNAVAILABLE }; // dense mode: nothing to fall back on
    }
  }
  reply ??= JSON.parse(await reads.run(() => site.search(prepared.search)));
  if (reply.error) return reply;
  Object.assign(timings, { embed_ms: embedded - started, search_ms: performance.now() - embedded });
  timings.python_memory_bytes = pythonMemory();
  return { ...reply, semantic: vector !== undefined, timings };
}

// Ask mode: the evidence for a question (sources, page texts and the prompt, fitted to the token budget)
// and the verdict on an answer's citations, from the core through the browser boundary; the provider
// call itself is the page's.
/** @param {import("./protocol.js").EvidenceMessage} message @returns {Promise<import("./protocol.js").EvidenceReply>} */
async function evidence({ question, history, budget, context, max_tokens }) {
  await keyword.promise;
  const request = JSON.stringify({ question, history, budget, context, max_tokens });
  const vector = semanticReady ? (await embed(site.ask_retrieval_query(request))).vector : undefined;
  return JSON.parse(await reads.run(() => site.ask_evidence(request, vector)));
}

/** @param {import("./protocol.js").VerifyMessage} message @returns {Promise<import("./protocol.js").VerifyReply>} */
async function verify({ answer, evidence }) {
  await keyword.promise;
  // ranged: a quote cited outside the sources is looked for in the whole list's index
  return JSON.parse(await reads.run(() => site.verify_answer(JSON.stringify({ answer, evidence }))));
}

/** @type {{[type: string]: (request: any) => Promise<object>}} each request's handler, by its type */
const REQUESTS = { search, evidence, verify };

/** @param {import("./protocol.js").InitMessage} message */
async function init(message) {
  mark("worker_started");
  config = message.config;
  encoder = new Encoder(message.port);
  reads = new RangedReads({ base: config.base, fetch: nativeFetch, count: (kind, n) => progress.count(kind, n) });
  let semantic;
  try {
    ({ semantic } = await start());
  } catch (error) {
    console.error("Search could not start:", error);
    post({ type: "failed", error: oneLine(error), stage });
    return;
  }
  try {
    await semantic;
  } catch (error) {
    progress.stop();
    semanticFailed(error);
  }
  await readIndexWhole().catch((error) => console.warn("The index stays read by range:", error));
}

// Background downloads wait until no request has run for this long: a visitor's searches keep the line.
const QUIET_MS = 1000;

async function quiet() {
  for (;;) {
    const waited = performance.now() - lastRequestEnded;
    if (!requestsUnderWay && waited >= QUIET_MS) return;
    await new Promise((resolve) => setTimeout(resolve, Math.max(QUIET_MS - waited, 100)));
  }
}

// The index files queries read by range, fetched whole in the order `Site.ranged_files` gives, as many
// as fit the corpus file's `whole_index_mb` (16 MB by default), one file at a time and only while no
// search runs: a query then waits on no round trip for them. The dev questions, first seen, p50,
// loopback / 20 Mbit/s:
// - 112 papers, all 10.3 MB: a hybrid query 245-259 -> 93-100 ms / 623 -> 170 ms;
// - 1,000 papers, the forward file and the dense lists (7.5 MB of 81): 360-367 -> 246-276 ms /
//   931-944 -> 651 ms.
// The encoder's word-piece table (11.8 MB, whatever the list) stays ranged: 13 ms a query more.
// Chosen as semantic search comes up (its files are then known), so the start-up timeline says so.
function chooseWholeIndex() {
  const files = JSON.parse(site.ranged_files()).filter((path) => !wholeAtStart.has(path));
  let total = 0;
  const fit = files.findIndex((path) => (total += checksums.wireBytes([path])) > config.whole_index_bytes);
  wholeIndex = fit === -1 ? files : files.slice(0, fit);
  if (wholeIndex.length) mark("index_whole_wanted");
}

// A file that fails (its checksum, the network) stays ranged: the core checks its blocks as before.
async function readIndexWhole() {
  if (!wholeIndex) {
    chooseWholeIndex(); // semantic search failed: the keyword side's files
    post({ type: "timeline", timeline: { ...timeline } });
  }
  if (!wholeIndex?.length) return;
  for (const path of wholeIndex) {
    await quiet();
    try {
      reads.keepWhole(path, await checksums.fetch(config.base, path, () => {}));
    } catch (error) {
      console.warn(`${path} stays read by range:`, error);
    }
  }
  mark("index_read_whole");
  post({ type: "timeline", timeline: { ...timeline } });
}

/** @param {import("./protocol.js").WorkerRequest} request */
async function answer(request) {
  requestsUnderWay++;
  try {
    const replied = REQUESTS[request.type](request);
    if (request.type === "search" && !keywordUp) earlySearches.push(replied.catch(() => {}));
    const reply = await replied;
    if ("error" in reply) post({ type: "result", id: request.id, error: reply.error });
    else post({ type: "result", id: request.id, reply });
  } catch (error) {
    console.error(`${request.type} failed:`, error);
    post({ type: "result", id: request.id, error: oneLine(error) });
  } finally {
    requestsUnderWay--;
    lastRequestEnded = performance.now();
  }
}

self.onmessage = ({ data }) => {
  const message = /** @type {ToSearchWorker} */ (data);
  if (message.type === "init") init(message);
  else if (message.type === "encoder_failed") encoder.failed(new Error(message.error));
  else answer(message);
};
