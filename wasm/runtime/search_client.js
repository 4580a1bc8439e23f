// The page's side of the engine: starts the search worker (worker.js) and the query encoder's worker
// (encoder.js), joins them by a MessageChannel, keeps what they report of their loading, and turns
// requests into promises answered by the worker's "result" message of the same id.

/** @typedef {import("./protocol.js").AppConfig} AppConfig */
/** @typedef {import("./protocol.js").Status} Status */
/** @typedef {import("./protocol.js").FromSearchWorker} FromSearchWorker */
/** @typedef {import("./protocol.js").EncoderProgressMessage} EncoderProgressMessage */
/** @typedef {import("./protocol.js").ToSearchWorker} ToSearchWorker */
/** @typedef {import("./protocol.js").WorkerRequest} WorkerRequest */
/** @typedef {import("./protocol.js").SearchOptions} SearchOptions */
/** @typedef {import("./protocol.js").SearchReply} SearchReply */
/** @typedef {(message: FromSearchWorker | EncoderProgressMessage) => void} Listener */
/** @typedef {import("./protocol.js").RequestsByType} RequestsByType */
/** @typedef {import("./protocol.js").RepliesByType} RepliesByType */

export const RESULTS_K = 20;

/** A promise with its settle functions, and no "unhandled rejection" for a page that never awaits it. */
function deferred() {
  /** @type {PromiseWithResolvers<void>} */
  const settled = Promise.withResolvers();
  settled.promise.catch(() => {}); // the status line reports a failure
  return settled;
}

/** @returns {Status} */
function initialStatus() {
  return {
    keyword: false,
    semantic: false,
    semantic_error: null,
    loading: "starting",
    bytes: 0,
    kinds: {},
    error: null,
    last_search: null,
    timeline: {},
    python_start: null,
    last_ask: null,
  };
}

export class SearchClient {
  /** @param {AppConfig} config */
  constructor(config) {
    /** @type {Status} what readingRoom.status() copies; Ask mode writes last_ask */
    this.state = initialStatus();
    this.keyword = deferred();
    this.semantic = deferred();
    /** @type {Map<number, {resolve: (reply: RepliesByType[keyof RepliesByType]) => void, reject: (error: Error) => void}>} */
    this.pending = new Map();
    this.nextId = 1;
    /** @type {Set<Listener>} */
    this.listeners = new Set();
    /** @type {{[source: string]: import("./protocol.js").ByteCounts}} bytes by kind, per worker */
    this.downloads = {};
    this.worker = new Worker(config.worker, { type: "module" });
    // The encoder runs beside the search worker, on a core of its own; both report their downloads.
    this.encoder = new Worker(config.encoder, { type: "module" });
    this.worker.onmessage = ({ data }) => this.fromWorker(data);
    this.worker.onerror = (event) => {
      event.preventDefault();
      this.fromWorker({ type: "failed", stage: String(this.state.loading), error: event.message || "worker error" });
    };
    this.encoder.onmessage = ({ data }) => this.fromEncoder(data);
    this.encoder.onerror = (event) => {
      event.preventDefault();
      const error = `the query encoder did not load (${event.message || "worker error"})`;
      this.post({ type: "encoder_failed", error });
    };
    const channel = new MessageChannel();
    const saveData = Boolean(/** @type {{connection?: {saveData?: boolean}}} */ (navigator).connection?.saveData);
    this.post({ type: "init", config, port: channel.port1, save_data: saveData }, [channel.port1]);
    this.encoder.postMessage({ type: "init", config, port: channel.port2 }, [channel.port2]);
  }

  /** @param {ToSearchWorker} message @param {Transferable[]} [transfer] */
  post(message, transfer = []) {
    this.worker.postMessage(message, transfer);
  }

  /** @param {Listener} listener */
  listen(listener) {
    this.listeners.add(listener);
  }

  /** @returns {Status} a copy: callers never change the client's state */
  status() {
    return { ...this.state, kinds: { ...this.state.kinds }, timeline: { ...this.state.timeline } };
  }

  /**
   * One request, answered by the worker's "result" of the same id.
   * @template {keyof RequestsByType} T
   * @param {T} type
   * @param {Omit<RequestsByType[T], "type" | "id">} body
   * @returns {Promise<RepliesByType[T]>}
   */
  request(type, body) {
    // Posted at once, keyword search up or not: the worker answers it once it can, and so knows that a
    // visitor is waiting for results (the dense side's files wait for the keyword results; worker.js).
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.state.error) return reject(new Error(this.state.error));
      // The worker answers an id with the reply to its request's type.
      this.pending.set(id, { resolve: /** @type {(reply: RepliesByType[keyof RepliesByType]) => void} */ (resolve), reject });
      this.post(/** @type {WorkerRequest} */ (/** @type {unknown} */ ({ ...body, type, id })));
    });
  }

  /**
   * @param {string} query
   * @param {SearchOptions} [options]
   * @returns {Promise<SearchReply>}
   */
  search(query, { k = RESULTS_K, mode = "hybrid", filters = {} } = {}) {
    return this.request("search", { query, k, mode, filters });
  }

  /** @param {import("./protocol.js").Timeline} epochMsByStep */
  setTimeline(epochMsByStep) {
    for (const [step, epochMs] of Object.entries(epochMsByStep)) {
      this.state.timeline[step] = Math.round(epochMs - performance.timeOrigin);
    }
  }

  /** @param {string} source @param {import("./protocol.js").ByteCounts} kinds */
  countDownloads(source, kinds) {
    this.downloads[source] = kinds;
    const total = /** @type {import("./protocol.js").ByteCounts} */ ({});
    for (const byKind of Object.values(this.downloads)) {
      for (const [kind, n] of Object.entries(byKind)) total[kind] = (total[kind] || 0) + n;
    }
    this.state.kinds = total;
    this.state.bytes = Object.values(total).reduce((sum, n) => sum + n, 0);
  }

  /** @param {FromSearchWorker} data */
  fromWorker(data) {
    const state = this.state;
    if (data.type === "progress") {
      // once loading is over, later progress (the index read whole) counts bytes but loads nothing
      Object.assign(state, { loading: state.loading === null ? null : data.stage, python_start: data.python_start });
      this.countDownloads(data.source, data.kinds);
      this.setTimeline(data.timeline);
    } else if (data.type === "ready" && data.which === "keyword") {
      state.keyword = true;
      this.keyword.resolve();
    } else if (data.type === "ready" && data.which === "semantic") {
      Object.assign(state, { semantic: true, checksums_ms: data.checksums_ms });
      state.loading = null;
      this.semantic.resolve();
    } else if (data.type === "semantic_failed") {
      Object.assign(state, { semantic: false, semantic_error: data.error, loading: null });
      this.semantic.reject(new Error(data.error));
    } else if (data.type === "failed") {
      state.error = `${data.stage}: ${data.error}`;
      state.loading = null;
      this.keyword.reject(new Error(state.error));
      this.semantic.reject(new Error(state.error));
      for (const { reject } of this.pending.values()) reject(new Error(state.error));
      this.pending.clear();
    } else if (data.type === "result") {
      this.settle(data);
    } else if (data.type === "timeline") {
      this.setTimeline(data.timeline);
    }
    for (const listener of this.listeners) listener(data);
  }

  /** @param {import("./protocol.js").ResultMessage} result */
  settle(result) {
    const waiting = this.pending.get(result.id);
    if (!waiting) throw new Error(`the search worker answered ${result.id}, which no request waits for`);
    const { resolve, reject } = waiting;
    this.pending.delete(result.id);
    if ("error" in result) return reject(new Error(result.error));
    if ("timings" in result.reply) this.state.last_search = result.reply.timings;
    resolve(result.reply);
  }

  /** @param {import("./protocol.js").EncoderProgressMessage} data */
  fromEncoder(data) {
    if (data.type !== "progress") return;
    this.countDownloads(data.source, data.kinds);
    this.setTimeline(data.timeline);
    for (const listener of this.listeners) listener(data);
  }
}
