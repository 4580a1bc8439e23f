// The query encoder's thread: ONNX Runtime Web and the encoder session, apart from Python. It starts
// downloading (and gunzipping and checking) when the search worker says the keyword files are in, or
// should be by now ("go"), so that on a slow line they never share the bandwidth (worker.js orders the
// downloads), and creates the session when keyword search is up ("session"): on a machine whose cores
// are busy, creating it while Python boots delays keyword search by seconds; after it, the session is
// created while the search worker reads the vectors.
// Its messages (from the page: init; with the search worker: go, session, embed, started, failed,
// vector) are typed in protocol.js.

import { Checksums, Progress, fetchBytes, loadManifest } from "./download.js";

/** @typedef {import("./protocol.js").ToEncoder} ToEncoder */
/** @typedef {import("./protocol.js").FromEncoder} FromEncoder */
/** @typedef {import("./protocol.js").EncoderProgressMessage} EncoderProgressMessage */
/** @typedef {import("./protocol.js").AppConfig} AppConfig */
/** @typedef {typeof import("onnxruntime-web")} Ort */

/** @type {import("./protocol.js").Timeline} step -> epoch ms, as worker.js keeps it */
const timeline = {};
// An ONNX model of one Identity node (float [1] -> float [1], opset 17), as onnx.helper writes it.
const RUNTIME_STARTER = Uint8Array.from(
  atob("CAg6NwoQCgF4EgF5IghJZGVudGl0eRIBdFoPCgF4EgoKCAgBEgQKAggBYg8KAXkSCgoICAESBAoCCAFCBAoAEBE="),
  (char) => char.charCodeAt(0),
);
/** @type {AppConfig} set by the page's "init", the first message */
let config;
/** @type {MessagePort} to the search worker, from "init" */
let port;
/** @type {Promise<Ort>} imported as soon as the worker has its config */
let ortModule;
/** @type {Ort} */
let ort;
/** @type {import("onnxruntime-web").InferenceSession} */
let session;
/** @type {Promise<number> | null} the start-up (its checksums' ms), begun when the first "go" says */
let started = null;
/** @type {ReturnType<typeof setTimeout> | undefined} a "go" that waits */
let goTimer;
/** @type {PromiseWithResolvers<void>} resolved at "session" */
const sessionAllowed = Promise.withResolvers();

const progress = new Progress((kinds) => {
  /** @type {EncoderProgressMessage} */
  const message = { type: "progress", source: "encoder", kinds, timeline: { ...timeline } };
  self.postMessage(message);
});

/** @param {string} step */
function mark(step) {
  timeline[step] = performance.timeOrigin + performance.now();
}

// ORT's own modules come in through import(): their sizes, from resource timing.
function moduleBytes() {
  return performance
    .getEntriesByType("resource")
    .filter((entry) => entry.name.endsWith(".mjs"))
    .reduce((sum, entry) => sum + /** @type {PerformanceResourceTiming} */ (entry).decodedBodySize, 0);
}

async function start() {
  const wasmUrl = new URL(config.ort_wasm.wasm, self.location.href).href;
  const gzipped = config.gzipped.some((url) => new URL(url, self.location.href).href === wasmUrl);
  const { manifest } = await loadManifest(config.manifest);
  const checksums = new Checksums(manifest);
  const count = (/** @type {number} */ n) => progress.count("model", n);
  const model = checksums.fetch(config.base, manifest.files.encoder, count).then((bytes) => {
    mark("encoder_fetched");
    return bytes;
  });
  model.catch(() => {}); // awaited below, once ONNX Runtime is up
  const wasm = await fetchBytes(wasmUrl, { gzipped, count: (n) => progress.count("runtime", n) });
  await sessionAllowed.promise;
  ort = await ortModule;
  ort.env.wasm.wasmPaths = config.ort_wasm;
  ort.env.wasm.wasmBinary = wasm; // so ORT fetches nothing: the (gunzipped) bytes are here
  ort.env.wasm.numThreads = 1; // no cross-origin isolation on static hosts, so no shared memory
  // ONNX Runtime starts its wasm with the first session; a session of a one-node model starts it now,
  // while the encoder (2.3 times the wasm's bytes) is still coming.
  await ort.InferenceSession.create(RUNTIME_STARTER, { executionProviders: ["wasm"] });
  mark("ort_started");
  const encoderBytes = await model;
  // Dequantise the int8 weights once at load, as the CLI does (builder/query_encoder/at_query_time.py DEQUANTIZE_AT_LOAD):
  // otherwise every run dequantises all of them again, about 3x slower.
  session = await ort.InferenceSession.create(encoderBytes, {
    executionProviders: ["wasm"],
    extra: { session: { disable_quant_qdq: "1" } },
  });
  mark("encoder_started");
  progress.count("runtime", moduleBytes());
  progress.stop();
  return checksums.ms;
}

/**
 * @param {import("./protocol.js").EmbedMessage} message the query's WordPiece ids and their rows
 * @returns {Promise<Float32Array>}
 */
async function embed({ ids, codes, scales }) {
  const shape = [1, ids.length];
  const feeds = {
    input_ids: new ort.Tensor("int64", BigInt64Array.from(ids, BigInt), shape),
    attention_mask: new ort.Tensor("int64", new BigInt64Array(ids.length).fill(1n), shape),
    word_piece_codes: new ort.Tensor("int8", codes, [1, ids.length, codes.length / ids.length]),
    word_piece_scales: new ort.Tensor("float32", scales, shape),
  };
  const outputs = await session.run(feeds);
  return Float32Array.from(/** @type {Float32Array} the graph's one output */ (outputs[session.outputNames[0]].data));
}

/** @param {unknown} error */
function message(error) {
  const described = error ? /** @type {{message?: unknown}} */ (error).message : undefined;
  return String(described || error);
}

/** @param {FromEncoder} message @param {Transferable[]} [transfer] */
function reply(message, transfer = []) {
  port.postMessage(message, transfer);
}

async function begin() {
  if (started) return;
  started = start();
  try {
    reply({ type: "started", checksums_ms: await started });
  } catch (error) {
    console.error("The query encoder could not start:", error);
    progress.stop();
    reply({ type: "failed", error: message(error) });
  }
}

/** @param {MessageEvent<ToEncoder>} event */
async function fromSearchWorker({ data }) {
  if (data.type === "session") {
    sessionAllowed.resolve();
  } else if (data.type === "go" && !started) {
    clearTimeout(goTimer);
    if (data.after_ms > 0) goTimer = setTimeout(begin, data.after_ms);
    else await begin();
  } else if (data.type === "embed") {
    try {
      const vector = await embed(data);
      reply({ type: "vector", id: data.id, vector }, [vector.buffer]);
    } catch (error) {
      reply({ type: "vector", id: data.id, error: message(error) });
    }
  }
}

self.onmessage = ({ data }) => {
  if (data.type !== "init") return;
  const init = /** @type {import("./protocol.js").InitMessage} */ (data);
  mark("encoder_worker_started");
  config = init.config;
  port = init.port;
  port.onmessage = fromSearchWorker;
  ortModule = import(config.ort);
  ortModule.catch(() => {}); // reported by start()
};
