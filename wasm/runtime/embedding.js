// The search worker's side of the query encoder (encoder.js, a worker of its own reached through a port)
// and of the HNSW search's dot products, computed here on typed arrays for the core.

/** @typedef {import("./protocol.js").FromEncoder} FromEncoder */
/** @typedef {import("./protocol.js").ToEncoder} ToEncoder */

// The latest query vectors, by the token ids the encoder read: a query searched again (submitted after
// the search-as-you-type, "More results", another filter or mode, Ask on the same text) skips the encoder,
// which takes most of a hybrid query's time, and the reading of its word-piece rows. Same ids, same
// vector, so results are unchanged.
const VECTOR_CACHE_SIZE = 64;

export class Encoder {
  /** @param {MessagePort} port */
  constructor(port) {
    this.port = port;
    /** @type {Map<number, {resolve: (vector: Float32Array) => void, reject: (error: Error) => void}>} */
    this.embeddings = new Map();
    this.nextId = 1;
    /** @type {Map<string, Float32Array>} ids joined by "," -> vector; in order of use, the oldest first */
    this.vectors = new Map();
    /** @type {PromiseWithResolvers<{checksums_ms: number}>} */
    const start = Promise.withResolvers();
    /** the encoder's start-up report, or why it failed */
    this.started = start.promise;
    this.started.catch(() => {}); // awaited once the vectors are in
    this.failStart = start.reject;
    port.onmessage = ({ data }) => {
      const message = /** @type {FromEncoder} */ (data);
      if (message.type === "started") start.resolve(message);
      else if (message.type === "failed") this.failed(new Error(message.error));
      else if (message.type === "vector") this.settle(message);
    };
  }

  /** @param {ToEncoder} message */
  post(message) {
    this.port.postMessage(message);
  }

  // The encoder's worker's 12 MB (the encoder and ORT Web's wasm) wait for the keyword files (10,000 papers:
  // 3.3 MB), which, shared with them (18 MB then), came 1.4 s later on a 20 Mbit/s line. Python's boot holds this thread as they come, so word that they are in
  // reaches the encoder's worker up to a second late, the line idle meanwhile: it is also told, once Python's
  // files are in, how long the keyword files should take at the rate Python's came, and starts at whichever
  // comes first.
  /** @param {Promise<number>} keywordFilesMs @param {Promise<unknown>} keywordFetched */
  goAfter(keywordFilesMs, keywordFetched) {
    keywordFilesMs.then((after_ms) => this.post({ type: "go", after_ms }), () => {});
    const now = () => this.post({ type: "go", after_ms: 0 });
    keywordFetched.then(now, now);
  }

  /** @param {import("./protocol.js").VectorMessage} message */
  settle(message) {
    const waiting = this.embeddings.get(message.id);
    if (!waiting) throw new Error(`the encoder answered ${message.id}, which no embedding waits for`);
    const { resolve, reject } = waiting;
    this.embeddings.delete(message.id);
    if ("error" in message) reject(new Error(message.error));
    else resolve(message.vector);
  }

  /** The encoder's worker is gone: its start and every embedding under way fail with `error`.
   * @param {Error} error */
  failed(error) {
    this.failStart(error);
    for (const { reject } of this.embeddings.values()) reject(error);
    this.embeddings.clear();
  }

  /**
   * The vector of a query's token ids (undefined when the query has no words for the encoder), and whether
   * it came from the cache.
   * @param {Int32Array} ids
   * @param {(ids: Int32Array) => Promise<Uint8Array>} wordPieceRows the ids' codes then their float32 scales
   * @returns {Promise<{vector: Float32Array | undefined, cached: boolean}>}
   */
  async embed(ids, wordPieceRows) {
    if (!ids.length) return { vector: undefined, cached: false };
    const key = ids.join(",");
    let vector = this.vectors.get(key);
    const cached = vector !== undefined;
    if (vector !== undefined) {
      this.vectors.delete(key); // re-inserted below: the most recently used
    } else {
      const rows = await wordPieceRows(ids);
      const width = rows.length / ids.length - Float32Array.BYTES_PER_ELEMENT;
      const codes = new Int8Array(rows.buffer, rows.byteOffset, ids.length * width);
      const scales = new Float32Array(rows.slice(ids.length * width).buffer); // a copy: aligned
      const id = this.nextId++;
      /** @type {Promise<Float32Array>} */
      const embedding = new Promise((resolve, reject) => this.embeddings.set(id, { resolve, reject }));
      this.post({ type: "embed", id, ids, codes, scales });
      vector = await embedding;
      const oldest = this.vectors.keys().next().value;
      if (this.vectors.size >= VECTOR_CACHE_SIZE && oldest !== undefined) this.vectors.delete(oldest);
    }
    this.vectors.set(key, vector);
    return { vector, cached };
  }
}
