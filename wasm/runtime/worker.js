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

import { Checksums, Progress, loadManifest } from "./download.js";
import { Encoder } from "./embedding.js";
import { countModules, fetchSnapshot, pythonFiles, startPython } from "./python_start.js";
import { RangedReads } from "./ranged_reads.js";
import { filesToReadWhole, whenQuiet } from "./whole_index.js";

/** @typedef {import("./protocol.js").Core} Core */
/** @typedef {import("./protocol.js").Site} Site */
/** @typedef {import("./protocol.js").FromSearchWorker} FromSearchWorker */
/** @typedef {import("./protocol.js").ToSearchWorker} ToSearchWorker */
/** @typedef {import("./protocol.js").SearchReply} SearchReply */
/** @typedef {import("./protocol.js").CoreSearchReply} CoreSearchReply */
/** @typedef {import("./protocol.js").ManifestFiles} ManifestFiles */
/** @typedef {import("./protocol.js").WorkerRequest} WorkerRequest */
/** @typedef {import("./protocol.js").ErrorReply} ErrorReply */
/** @typedef {import("./protocol.js").RepliesByType} RepliesByType */

const nativeFetch = self.fetch.bind(self);

/**
 * Everything the worker keeps between messages, its fields documented once: "init" brings the first five,
 * start-up the rest (the manifest's checksums, then the site once keyword search is up).
 * @param {import("./protocol.js").InitMessage} message
 */
function initialState({ config, port, save_data }) {
  const progress = new Progress((kinds) => {
    const { stage, timeline, pythonStart } = state;
    post({ type: "progress", source: "search", stage, kinds, timeline: { ...timeline }, python_start: pythonStart });
  });
  const count = (/** @type {string} */ kind, /** @type {number} */ n) => progress.count(kind, n);
  return {
    config, // the page's settings
    saveData: Boolean(save_data), // the browser asks sites to save data: no index fetched whole ahead of need
    encoder: new Encoder(port), // the query encoder's worker, through the port the page handed over
    reads: new RangedReads({ base: config.base, fetch: nativeFetch, count }), // what a step of the core reads by range
    progress, // start-up byte counts, reported to the page
    checksums: /** @type {Checksums | null} */ (null), // the manifest's sha256 of every data file, once it is in
    site: /** @type {PromiseWithResolvers<Site>} */ (Promise.withResolvers()), // the one handle on the core: requests wait for it
    keywordUp: false, // whether `site` has resolved
    semanticReady: false,
    semanticError: /** @type {string | null} */ (null), // why semantic search is off for good (a failed load or query)
    stage: "starting", // the start-up stage the page shows
    prefetched: /** @type {Map<string, Uint8Array>} */ (new Map()), // site path -> bytes fetched ahead, handed to Python once
    // When each start-up step finished, in epoch ms (performance.timeOrigin differs between page and worker).
    timeline: /** @type {import("./protocol.js").Timeline} */ ({}),
    pythonStart: /** @type {"snapshot" | "boot" | null} */ (null), // Python restored from the snapshot, or booted
    pythonMemory: () => 0, // the size of Python's WebAssembly memory, once it runs
    earlySearches: /** @type {Promise<unknown>[]} */ ([]), // the searches asked before keyword search was up, until answered
    wholeIndex: /** @type {string[] | null} */ (null), // the index files to fetch whole once searches pause; null: not chosen yet
    wholeAtStart: /** @type {Set<string>} */ (new Set()), // the index files start-up fetches whole
    requestsUnderWay: 0,
    lastRequestEnded: 0, // performance.now() when the latest request ended
  };
}

/** @typedef {ReturnType<typeof initialState>} WorkerState */
/** @type {WorkerState} set by "init", which the page posts before any request */
let state;

/** @param {FromSearchWorker} message */
function post(message) {
  self.postMessage(message);
}

/** @param {string} step */
function mark(step) {
  state.timeline[step] = performance.timeOrigin + performance.now();
}

/** @param {string} text */
function setStage(text) {
  state.stage = text;
  state.progress.report(true);
}

/** @param {string} kind */
function counter(kind) {
  return (/** @type {number} */ n) => state.progress.count(kind, n);
}

/** The manifest's checksums: start-up reads the manifest before any data file. */
function checksums() {
  if (!state.checksums) throw new Error("manifest.json is not in yet");
  return state.checksums;
}

/** @param {string} path @param {string} kind */
async function prefetch(path, kind) {
  state.prefetched.set(path, await checksums().fetch(state.config.base, path, counter(kind)));
}

// One line for the visitor: a Python error's message is its whole traceback, whose last line says what.
/** @param {unknown} error */
function oneLine(error) {
  const described = error ? /** @type {{message?: unknown}} */ (error).message : undefined;
  const text = String(described || error);
  const lines = text.split("\n").map((line) => line.trim()).filter(Boolean);
  const last = lines.length ? lines[lines.length - 1] : "unknown error";
  return last.length > 300 ? last.slice(0, 297) + "..." : last;
}

// The engine reads a whole file synchronously, as Python does, where the worker has not fetched it ahead.
/** @param {Core} core @param {string} path @returns {Uint8Array} */
function readSync(core, path) {
  const ahead = state.prefetched.get(path);
  if (ahead) {
    state.prefetched.delete(path);
    return ahead;
  }
  return checksums().readSync(state.config.base, path, counter("data"), core);
}

// Downloads come in waves, each chosen so that a slow line (20 Mbit/s) brings keyword search up soonest:
// first Python's own files and the manifest; once Python's files are in, Python boots (seconds of this
// thread) while the keyword files come (the paper table, the chunk table, the postings directory and the
// forward index); then the encoder's worker fetches ONNX Runtime and the encoder (its session waits until
// keyword search is up); once the keyword files are in, the dense directory, the papers' vectors and the
// tokenizer's files, but only after the keyword results of the searches asked before keyword search was
// up (a link with a query, a visitor who typed while it loaded): those files would hold four of the
// browser's six connections to the host while the search's ranges queue. The rest of the index is read by
// range as queries need it (ranged_reads.js). Fetching the keyword files beside Python's held its boot
// back on a slow line; this order brings the first keyword result sooner and the first semantic one no
// later (the commit that chose it gives the figures at 10,000 papers).
// The files keyword search reads whole, fetched as Python starts. The missing works are among them:
// every search matches its query against them, so the first must not wait on a synchronous fetch.
const KEYWORD_FILES = /** @type {const} */ (["paper_table", "chunks", "postings", "text_dictionary", "missing"]);

/** @param {WorkerState} state */
async function start({ config, reads }) {
  setStage("Loading the Python runtime and the keyword index");
  const gzippedRuntime = new Set(config.gzipped.map((url) => new URL(url, self.location.href).href));
  const pyodideRoot = new URL(config.pyodide, self.location.href).href;
  const python = pythonFiles(pyodideRoot, gzippedRuntime, counter("pyodide"));
  self.fetch = python.fetchForPython;
  const manifest = loadManifest(config.manifest).then(({ text, manifest }) => {
    state.checksums = new Checksums(manifest);
    state.progress.count("data", text.length);
    return { text, files: manifest.files };
  });
  const pythonFetched = Promise.all([manifest, python.fetched]).then(([{ files }]) => files);
  const indexFiles = pythonFetched.then((files) =>
    Promise.all(KEYWORD_FILES.map((role) => files[role]).flatMap((path) => (path ? [prefetch(path, "data")] : []))),
  );
  indexFiles.then(() => mark("keyword_data_fetched"), () => {});
  // The postings' forward index, which the first query of several words reads whole (10,000 papers:
  // 1.05 MB that, fetched by that query beside the encoder's download, held its first result 1.4 s on a
  // 20 Mbit/s line). Its ranges are then sliced from it; a failure here only leaves it to be read by range.
  const forwardIndex = pythonFetched
    .then(async (files) => {
      const path = files.forward_index;
      if (!path) return;
      state.wholeAtStart.add(path);
      reads.keepWhole(path, await checksums().fetch(config.base, path, counter("data")));
    })
    .catch((error) => console.warn("The forward index will be read by range:", error));
  const snapshotUrl = new URL(config.python_snapshot, self.location.href).href;
  const snapshot = fetchSnapshot(snapshotUrl, gzippedRuntime.has(snapshotUrl), counter("pyodide"));
  const snapshotFetched = snapshot.catch(() => {}); // failed or cancelled: Python boots instead
  const keywordFetched = Promise.all([indexFiles, snapshotFetched, python.fetched, forwardIndex]);
  keywordFetched.then(() => mark("keyword_files_fetched"), () => {});
  state.encoder.goAfter(pythonFetched.then(keywordFilesMs), Promise.all([indexFiles, forwardIndex]));
  const semantic = Promise.all([manifest, Promise.race([keywordFetched, state.site.promise])]).then(
    async ([{ files }]) => {
      if (state.earlySearches.length) await state.site.promise.then(() => Promise.allSettled(state.earlySearches));
      return startSemantic(files);
    },
  );
  semantic.catch(() => {}); // reported once keyword search is up (below)
  const runtime = { snapshot, glue: python.glue, pyodideRoot, wheel: config.wheel, countWheel: counter("runtime") };
  const python_ = startPython({ ...runtime, mark });
  const [{ core, pythonStart, memoryBytes }] = await Promise.all([python_, manifest, indexFiles]);
  Object.assign(state, { pythonStart, pythonMemory: memoryBytes });
  mark("core_installed");
  countModules(pyodideRoot, counter("pyodide"));
  self.fetch = nativeFetch;
  python.forget();
  setStage("Starting keyword search");
  const site = core.open_site((path) => readSync(core, path), (await manifest).text, reads.readRange, reads.announce);
  mark("keyword_ready");
  state.encoder.post({ type: "session" }); // not before: Python's boot would share its core
  state.keywordUp = true;
  state.site.resolve(site);
  post({ type: "ready", which: "keyword" });
  if (!state.semanticReady) setStage("Loading the semantic model and vectors");
  return { semantic, site }; // wrapped: an async function returning a promise would wait for it
}

/** How long the keyword files should take at the rate Python's came (Encoder.goAfter says why).
 * @param {ManifestFiles} files */
function keywordFilesMs(files) {
  const keywordFiles = [files.paper_table, files.chunks, files.postings, files.forward_index, files.text_dictionary];
  return state.progress.msFor(checksums().wireBytes(keywordFiles.flatMap((path) => (path ? [path] : []))));
}

/** @param {ManifestFiles} files */
async function startSemantic(files) {
  const semanticFiles = Promise.all([
    prefetch(files.dense, "vectors"),
    ...(files.paper_vectors ? [prefetch(files.paper_vectors, "vectors")] : []),
    prefetch(files.vocab, "model"),
    prefetch(files.char_classes, "model"),
    prefetch(files.word_pieces, "model"),
  ]);
  const [, site] = await Promise.all([semanticFiles, state.site.promise]);
  mark("semantic_data_fetched");
  site.load_semantic(); // the dense directory and the papers' vectors; lists and rows are read by range
  mark("vectors_loaded");
  const { checksums_ms } = await state.encoder.started;
  state.semanticReady = true;
  chooseWholeIndex(site);
  mark("semantic_ready");
  state.progress.stop();
  setStage("ready");
  const checked = checksums().ms + checksums_ms;
  post({ type: "ready", which: "semantic", checksums_ms: checked });
}

/** @param {unknown} error */
function semanticFailed(error) {
  console.error("Semantic search is off; keyword search goes on:", error);
  const semanticError = oneLine(error);
  Object.assign(state, { semanticReady: false, semanticError });
  post({ type: "semantic_failed", error: semanticError });
}

/** The query's token ids for the encoder (field filters left out) and its vector.
 * @param {Site} site @param {string} query */
async function embed(site, query) {
  const idsProxy = site.encode_ids(query);
  const ids = Int32Array.from(idsProxy.toJs());
  idsProxy.destroy();
  return state.encoder.embed(ids, (ids) => wordPieceRows(site, ids));
}

/** The ids' rows of the encoder's word-piece table, read by range (a few blocks of 6 KB a query).
 * @param {Site} site @param {Int32Array} ids @returns {Promise<Uint8Array>} */
async function wordPieceRows(site, ids) {
  const rowsProxy = await state.reads.run(() => site.word_piece_rows(JSON.stringify(Array.from(ids))));
  const rows = rowsProxy.toJs();
  rowsProxy.destroy();
  return rows;
}

const SEMANTIC_UNAVAILABLE = "Semantic search is unavailable on this site; use keyword or hybrid mode.";

/** Whether the core or the worker refused the request (its reason in one line). @param {object} reply
 * @returns {reply is ErrorReply} */
const refused = (reply) => "error" in reply && Boolean(reply.error);

/**
 * One search: parsed and keyword-ranked once (Site.prepare) while the encoder embeds the query, then
 * finished with the vector; keyword-only from the same prepared search when the semantic side fails.
 * @param {import("./protocol.js").SearchMessage} message
 * @returns {Promise<SearchReply | ErrorReply>}
 */
async function search({ query, k, mode, filters }) {
  const site = await state.site.promise;
  if (mode === "dense" && !state.semanticReady) {
    return { error: state.semanticError ? SEMANTIC_UNAVAILABLE : "Semantic search is still loading; use keyword or hybrid mode." };
  }
  const started = performance.now();
  const request = JSON.stringify({ query, k, mode, filters });
  const embedding = state.semanticReady && mode !== "bm25" ? embed(site, query) : null; // the encoder starts first
  embedding?.catch(() => {}); // awaited below, unless the query is refused
  // The dense side's reads start once the vector is in, beside the keyword side's rounds rather than
  // after them; what fails there, search reports when it reads the same again.
  const denseAhead = embedding
    ?.then(({ vector }) => vector && state.reads.run(() => site.dense_ahead(request, vector)))
    .catch(() => {});
  /** @type {import("./protocol.js").Prepared} */
  const prepared = JSON.parse(await state.reads.run(() => site.prepare(request)));
  if ("error" in prepared) return prepared;
  try {
    return await finish(site, prepared, embedding, denseAhead, started);
  } finally {
    site.discard(prepared.search);
  }
}

/**
 * @param {Site} site
 * @param {import("./protocol.js").PreparedSearch} prepared
 * @param {Promise<{vector: Float32Array | undefined, cached: boolean}> | null} embedding
 * @param {Promise<unknown> | undefined} denseAhead
 * @param {number} started
 * @returns {Promise<SearchReply | ErrorReply>}
 */
async function finish(site, prepared, embedding, denseAhead, started) {
  /** @param {Float32Array} [vector] undefined for none @returns {Promise<CoreSearchReply | ErrorReply>} */
  const searched = async (vector) => JSON.parse(await state.reads.run(() => site.search(prepared.search, vector)));
  /** @type {import("./protocol.js").SearchTimings} */
  const timings = { embed_ms: 0, search_ms: 0, ahead_ms: 0, texts_ahead: 0, python_memory_bytes: 0 };
  let embedded = started; // the core's time after the vector is timed apart from the embedding's
  /** @type {Float32Array | undefined} undefined, not null, for none: Pyodide hands JavaScript's null to Python as JsNull */
  let vector;
  /** @type {CoreSearchReply | ErrorReply | undefined} */
  let reply;
  if (embedding) {
    try {
      timings.texts_ahead = state.reads.readAhead(prepared.read_ahead);
      timings.ahead_ms = performance.now() - started;
      let cached;
      ({ vector, cached } = await embedding);
      if (vector) timings.vector_cached = cached;
      embedded = performance.now();
      await denseAhead; // its blocks are read by then: search reads none of them twice
      reply = await searched(vector);
    } catch (error) {
      reply = await searched(); // throws when keyword search fails too
      semanticFailed(error);
      vector = undefined;
      delete timings.vector_cached;
      if (refused(reply)) return { error: SEMANTIC_UNAVAILABLE }; // dense mode: nothing to fall back on
    }
  }
  reply ??= await searched();
  if (refused(reply)) return reply;
  Object.assign(timings, { embed_ms: embedded - started, search_ms: performance.now() - embedded });
  timings.python_memory_bytes = state.pythonMemory();
  return { ...reply, semantic: vector !== undefined, timings };
}

// Ask mode: the evidence for a question (sources, page texts and the prompt, fitted to the token budget)
// and the verdict on an answer's citations, from the core through the browser boundary; the provider
// call itself is the page's.
/** @param {import("./protocol.js").EvidenceMessage} message
 * @returns {Promise<import("./protocol.js").EvidenceReply | ErrorReply>} */
async function evidence({ question, history, budget, context, max_tokens, model }) {
  const site = await state.site.promise;
  const request = JSON.stringify({ question, history, budget, context, max_tokens, model });
  const vector = state.semanticReady ? (await embed(site, site.ask_retrieval_query(request))).vector : undefined;
  return JSON.parse(await state.reads.run(() => site.ask_evidence(request, vector)));
}

/** @param {import("./protocol.js").VerifyMessage} message @returns {Promise<import("./protocol.js").VerifyReply>} */
async function verify({ answer, evidence }) {
  const site = await state.site.promise;
  // ranged: a quote cited outside the sources is looked for in the whole list's index
  return JSON.parse(await state.reads.run(() => site.verify_answer(JSON.stringify({ answer, evidence }))));
}

/** @param {import("./protocol.js").PageMessage} message @returns {Promise<import("./protocol.js").PageReply | ErrorReply>} */
async function page({ arxiv_id, page, chunk_id, quote }) { // the reading view's page (readingroom_core.in_context)
  const site = await state.site.promise;
  return JSON.parse(await state.reads.run(() => site.page_in_context(JSON.stringify({ arxiv_id, page, chunk_id, quote }))));
}

/** @typedef {import("./protocol.js").RequestsByType} RequestsByType */
/** @type {{[T in keyof RequestsByType]: (request: RequestsByType[T]) => Promise<RepliesByType[T] | ErrorReply>}} each
 * request's handler, by its type */
const REQUESTS = { search, evidence, verify, page };

/** @param {import("./protocol.js").InitMessage} message */
async function init(message) {
  state = initialState(message);
  mark("worker_started");
  let started;
  try {
    started = await start(state);
  } catch (error) {
    console.error("Search could not start:", error);
    post({ type: "failed", error: oneLine(error), stage: state.stage });
    return;
  }
  try {
    await started.semantic;
  } catch (error) {
    state.progress.stop();
    semanticFailed(error);
  }
  await readIndexWhole(started.site).catch((error) => console.warn("The index stays read by range:", error));
}

// Chosen as semantic search comes up (its files are then known), so the start-up timeline says so
// (whole_index.js says which files and why; commit 3fb530f measured first-sight queries with it).
/** @param {Site} site */
function chooseWholeIndex(site) {
  const wireBytes = (/** @type {string} */ path) => checksums().wireBytes([path]);
  const budget = state.config.whole_index_bytes;
  state.wholeIndex = filesToReadWhole(JSON.parse(site.ranged_files()), state.wholeAtStart, wireBytes, budget);
  if (state.wholeIndex.length) mark("index_whole_wanted");
}

/** @param {Site} site */
async function readIndexWhole(site) {
  if (!state.wholeIndex) {
    chooseWholeIndex(site); // semantic search failed: the keyword side's files
    post({ type: "timeline", timeline: { ...state.timeline } });
  }
  if (state.saveData && state.wholeIndex?.length) mark("index_whole_skipped"); // reported just below
  if (!state.wholeIndex?.length || state.saveData) return void state.progress.report(true);
  const count = (/** @type {number} */ n) => state.progress.countAfter("index_whole", n); // after "ready": counted still
  await state.reads.readWhole(state.wholeIndex, (path) => checksums().fetch(state.config.base, path, count), () => whenQuiet(state));
  mark("index_read_whole");
  state.progress.report(true); // its last bytes and the timeline
}

/** @param {WorkerRequest} request */
async function answer(request) {
  state.requestsUnderWay++;
  try {
    const handler = /** @type {(request: WorkerRequest) => Promise<RepliesByType[keyof RepliesByType] | ErrorReply>} */ (
      REQUESTS[request.type]
    ); // tsc does not tie a handler to its request's type
    const replied = handler(request);
    if (request.type === "search" && !state.keywordUp) state.earlySearches.push(replied.catch(() => {}));
    const reply = await replied;
    if ("error" in reply) post({ type: "result", id: request.id, error: reply.error });
    else post({ type: "result", id: request.id, reply });
  } catch (error) {
    console.error(`${request.type} failed:`, error);
    post({ type: "result", id: request.id, error: oneLine(error) });
  } finally {
    state.requestsUnderWay--;
    state.lastRequestEnded = performance.now();
  }
}

self.onmessage = ({ data }) => {
  const message = /** @type {ToSearchWorker} */ (data);
  if (message.type === "init") init(message);
  else if (message.type === "encoder_failed") state.encoder.failed(new Error(message.error));
  else answer(message);
};
