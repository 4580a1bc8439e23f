// Downloads for the engine's two workers (worker.js, encoder.js): counted as the bytes arrive, so the
// page shows real progress, and gunzipped here.
//
// Large files come as `<file>.gz` where the build wrote one (builder/site/store.py stored_gzipped): a host
// without compression would otherwise send them whole (GitHub Pages compresses text types on the fly,
// binary ones not, and wasm by no documented rule). A
// host that decodes the .gz on its way (Content-Encoding: gzip) hands over the plain bytes, so gzip's
// magic bytes decide, not the name. Data files are checked against the manifest's sha256 of the file
// itself, not of its .gz copy: what is checked is what is used, however it travelled.

/** @typedef {import("./protocol.js").ByteCounts} ByteCounts */
/** @typedef {import("./protocol.js").Manifest} Manifest */

export const GZIP = ".gz";
const PROGRESS_INTERVAL_MS = 200;
const nativeFetch = self.fetch.bind(self);

/** Start-up byte counts by kind of file, sent to the page (at most every 200 ms) while `counting`. */
export class Progress {
  /** @param {(kinds: ByteCounts) => void} post */
  constructor(post) {
    this.post = post;
    /** @type {ByteCounts} */
    this.kinds = {};
    this.counting = true;
    this.last = 0;
    this.firstByteAt = 0;
  }

  /** @param {string} kind @param {number} n */
  count(kind, n) {
    if (!this.counting) return;
    this.firstByteAt ||= performance.now();
    this.kinds[kind] = (this.kinds[kind] || 0) + n;
    this.report();
  }

  /** Bytes that come after start-up and are still part of what the visit downloaded without a search
   * asking for them (the index fetched whole): counted and reported whatever `counting` says.
   * @param {string} kind @param {number} n */
  countAfter(kind, n) {
    this.kinds[kind] = (this.kinds[kind] || 0) + n;
    this.report();
  }

  /** How long `bytes` more should take, at the rate bytes have come since the first (0 before any).
   * @param {number} bytes */
  msFor(bytes) {
    const total = Object.values(this.kinds).reduce((sum, n) => sum + n, 0);
    return total ? (bytes * (performance.now() - this.firstByteAt)) / total : 0;
  }

  report(force = false) {
    const now = performance.now();
    if (!force && now - this.last < PROGRESS_INTERVAL_MS) return;
    this.last = now;
    this.post({ ...this.kinds });
  }

  /** Start-up is over: passages read by later searches are no "loading". */
  stop() {
    this.report(true);
    this.counting = false;
  }
}

/** @param {Uint8Array[]} parts */
function concat(parts) {
  const bytes = new Uint8Array(parts.reduce((length, part) => length + part.length, 0));
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.length;
  }
  return bytes;
}

/** @param {ReadableStream<Uint8Array>} body @param {(n: number) => void} count @param {() => void} done */
function counted(body, count, done) {
  /** @type {TransformStream<Uint8Array, Uint8Array>} */
  const counter = new TransformStream({
    transform(chunk, controller) {
      count(chunk.length);
      controller.enqueue(chunk);
    },
    flush: done,
  });
  return body.pipeThrough(counter);
}

/** @param {ReadableStream<Uint8Array>} body @returns {Promise<ReadableStream<Uint8Array>>} */
async function gunzipped(body) {
  const reader = body.getReader();
  const head = [];
  for (let length = 0; length < 2; ) {
    const { done, value } = await reader.read();
    if (done) break;
    head.push(value);
    length += value.length;
  }
  const first = concat(head);
  const replayed = new ReadableStream({
    start(controller) {
      if (first.length) controller.enqueue(first);
    },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
  const isGzip = first[0] === 0x1f && first[1] === 0x8b;
  return isGzip ? replayed.pipeThrough(new DecompressionStream("gzip")) : replayed;
}

/**
 * The file at `url` as a stream of its own bytes (from `url`.gz when `gzipped`); `count(n)` is told of
 * every chunk that arrives and `done()` when the last has; `signal` cancels it.
 * @param {string} url
 * @param {{gzipped?: boolean, count?: (n: number) => void, done?: () => void, signal?: AbortSignal}} [options]
 */
export async function download(url, { gzipped = false, count = () => {}, done = () => {}, signal } = {}) {
  const response = await nativeFetch(gzipped ? url + GZIP : url, { signal });
  if (!response.ok) throw new Error(`${url}${gzipped ? GZIP : ""}: HTTP ${response.status}`);
  if (!response.body) throw new Error(`${url}${gzipped ? GZIP : ""}: HTTP ${response.status} with no body`);
  const body = counted(response.body, count, done);
  return { response, body: gzipped ? await gunzipped(body) : body };
}

/** @param {string} url @param {{gzipped?: boolean, count?: (n: number) => void}} [options] */
export async function fetchBytes(url, options) {
  const { body } = await download(url, options);
  return new Uint8Array(await new Response(body).arrayBuffer());
}

/** @param {ArrayBuffer} buffer */
function hex(buffer) {
  return Array.from(new Uint8Array(buffer), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** The data files the manifest lists: sha256 by site path, and which have a .gz copy. */
export class Checksums {
  /** @param {Manifest} manifest */
  constructor(manifest) {
    this.expected = new Map((manifest.artifacts || []).map((artifact) => [artifact.path, artifact.sha256]));
    this.sizes = new Map((manifest.artifacts || []).map((artifact) => [artifact.path, artifact.bytes]));
    this.ms = 0; // time spent checking, reported to the page
  }

  /** @param {string} path @param {string} actual its sha256, in hex */
  check(path, actual) {
    const expected = this.expected.get(path);
    if (expected === undefined) throw new Error(`${path} is not listed in manifest.json; the site is damaged`);
    if (actual !== expected) {
      throw new Error(`${path} does not match its checksum in manifest.json; the site's data is damaged`);
    }
  }

  /** @param {string} path @param {Uint8Array<ArrayBuffer>} bytes */
  async verified(path, bytes) {
    const started = performance.now();
    this.check(path, hex(await crypto.subtle.digest("SHA-256", bytes)));
    this.ms += performance.now() - started;
    return bytes;
  }

  /** The bytes `fetch` brings over the line for these paths (their .gz copies where listed).
   * @param {string[]} paths @returns {number} */
  wireBytes(paths) {
    return paths.reduce((sum, path) => sum + (this.sizes.get(path + GZIP) ?? this.sizes.get(path) ?? 0), 0);
  }

  /** A data file under `base`, from its .gz copy where the manifest lists one, checked before use.
   * @param {string} base @param {string} path @param {(n: number) => void} count */
  async fetch(base, path, count) {
    const gzipped = this.expected.has(path + GZIP);
    const { body } = await download(base + path, { gzipped, count });
    let bytes;
    try {
      bytes = new Uint8Array(await new Response(body).arrayBuffer());
    } catch (error) {
      if (!gzipped) throw error;
      console.error(`${path}${GZIP}:`, error);
      throw new Error(`${path}${GZIP} could not be decompressed; the site's data is damaged`, { cause: error });
    }
    return this.verified(path, bytes);
  }

  /** A data file under `base` read synchronously, as the core reads whole files (a worker may block on a
   * synchronous request, the page never does): from its .gz copy where the manifest lists one, gunzipped
   * and hashed by the core (DecompressionStream and Web Crypto are async only), checked before use.
   * @param {string} base @param {string} path @param {(n: number) => void} count
   * @param {Pick<import("./protocol.js").Core, "gunzipped" | "sha256_hex">} core @returns {Uint8Array} */
  readSync(base, path, count, core) {
    const gzipped = this.expected.has(path + GZIP);
    const request = new XMLHttpRequest();
    request.open("GET", base + path + (gzipped ? GZIP : ""), false);
    request.responseType = "arraybuffer";
    request.send();
    if (request.status !== 200) throw new Error(`${path}${gzipped ? GZIP : ""}: HTTP ${request.status}`);
    count(request.response.byteLength);
    let bytes = new Uint8Array(request.response);
    if (gzipped) {
      try {
        bytes = core.gunzipped(bytes);
      } catch (error) {
        console.error(`${path}${GZIP}:`, error);
        throw new Error(`${path}${GZIP} could not be decompressed; the site's data is damaged`, { cause: error });
      }
    }
    this.check(path, core.sha256_hex(bytes));
    return bytes;
  }
}

/** manifest.json (revalidated on every load: it names this build's files) as {text, manifest}.
 * @param {string} url @returns {Promise<{text: string, manifest: Manifest}>} */
export async function loadManifest(url) {
  let response;
  try {
    response = await nativeFetch(url, { cache: "no-cache" });
  } catch {
    throw new Error("manifest.json could not be fetched; check the connection and reload");
  }
  if (!response.ok) throw new Error(`manifest.json is missing (HTTP ${response.status}); the site is not fully published`);
  const text = await response.text();
  try {
    return { text, manifest: JSON.parse(text) };
  } catch {
    throw new Error("manifest.json is damaged (not JSON); rebuild and publish the site again");
  }
}
