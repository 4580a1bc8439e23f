// What a step of the search core reads by range, fetched in batches.
//
// The core announces each batch before reading it (`announce`): ranges of the index files (a query term's
// dictionary block and postings, a coarse list's codes, the rows it rescores) and of the texts file (the
// heads of the papers a reply shows, then their groups of chunks). A batch not fetched yet stops the step, which `run` runs again once the whole
// batch has come in parallel, so a query costs a few round trips, not one per range. The Range header
// makes the browser ask for identity encoding, so the bytes are the file's own; a host that ignores
// Range answers 200 with the whole file, which is kept and sliced from then on. Never a HEAD or a
// preload of these files under the URL a range uses: an unranged copy may come gzipped and sit in the
// cache.

// A step needs a few batches: dictionary, postings, forward groups, text heads and groups; then for words
// the list never uses, spelling's dictionary blocks, postings, and the heads and groups of the passages
// that spell them; a quoted phrase's checks two batches of texts at a time; lists and rows. Over a
// 1,000-paper list's 276 questions a prepare took 12 at most and a search 5. The bound only stops a step
// that would never settle.
const RANGE_ROUNDS = 32;

/** @typedef {import("./protocol.js").Ranges} Ranges */

/** @param {string} path @param {number} start @param {number} end */
const rangeKey = (path, start, end) => `${path} ${start} ${end}`;

export class RangedReads {
  /**
   * @param {object} options
   * @param {string} options.base the site's base URL
   * @param {typeof fetch} options.fetch the worker's own fetch (Pyodide's loader replaces self.fetch a while)
   * @param {(kind: string, bytes: number) => void} options.count start-up and query bytes, by kind
   */
  constructor({ base, fetch, count }) {
    this.base = base;
    this.fetch = fetch;
    this.count = count;
    /** @type {Map<string, Uint8Array>} "path start end" -> bytes fetched for the step being run again */
    this.fetchedRanges = new Map();
    /** @type {Map<string, Uint8Array>} site path -> the whole file (a host that ignored Range, or keepWhole) */
    this.wholeFiles = new Map();
    // Whether the host has answered a Range with 206: until it has, each file's first range goes alone.
    // Per host, not per file: on a 40 ms line, asking first per file cost each file's first batch a
    // round trip (the dictionary, the pages, the lists and the rows of a first query).
    this.rangesHonoured = false;
    /** @type {Ranges} what the current step needs and has not got */
    this.pending = [];
    // Fetches under way, by range key: two steps at once (a query typed while the page's own
    // search runs) often ask for the same bytes, and the second waits for the first's.
    /** @type {Map<string, Promise<void>>} */
    this.inFlight = new Map();
    this.announce = this.announce.bind(this);
    this.readRange = this.readRange.bind(this);
  }

  /** The core's notice of a batch, as JSON [[path, start, end], ...]; throws (stopping the step) when part
   * of it has not been fetched. @param {string} batchJson */
  announce(batchJson) {
    const batch = /** @type {Ranges} */ (JSON.parse(batchJson));
    const missing = batch.filter(([path, start, end]) => !this.fetched(path, start, end));
    if (missing.length) {
      this.pending = missing;
      throw new Error(`${missing.length} ranges to fetch`);
    }
  }

  /** What the core reads once its batch was announced: from this step's fetched ranges (let go once read:
   * the core keeps the checked blocks), or from a whole file.
   * @param {string} path @param {number} start @param {number} end (exclusive) @returns {Uint8Array} */
  readRange(path, start, end) {
    const whole = this.wholeFiles.get(path);
    if (whole) return whole.subarray(start, end);
    const key = rangeKey(path, start, end);
    const bytes = this.fetchedRanges.get(key);
    if (!bytes) throw new Error(`${path} bytes ${start}-${end} were read before they were announced`);
    this.fetchedRanges.delete(key);
    return bytes;
  }

  /** Run a step of the core, fetching the batches it announces and running it again until it has them.
   * @template T @param {() => T} step @returns {Promise<T>} */
  async run(step) {
    for (let round = 0; ; round++) {
      this.pending = [];
      try {
        return step();
      } catch (error) {
        if (!this.pending.length || round === RANGE_ROUNDS) throw error;
        await this.fetchBatch(this.pending);
      }
    }
  }

  /** A ranged file the worker fetched whole (and checked against the manifest): ranges are sliced from it.
   * @param {string} path @param {Uint8Array} bytes */
  keepWhole(path, bytes) {
    this.wholeFiles.set(path, bytes);
    for (const key of this.fetchedRanges.keys()) if (key.startsWith(`${path} `)) this.fetchedRanges.delete(key);
  }

  /** These ranged files fetched whole, one at a time, each once `quiet` says no search runs. A file that
   * fails (its checksum, the network) stays ranged: the core checks its blocks as before.
   * @param {string[]} paths @param {(path: string) => Promise<Uint8Array>} fetchChecked
   * @param {() => Promise<void>} quiet */
  async readWhole(paths, fetchChecked, quiet) {
    for (const path of paths) {
      await quiet();
      try {
        this.keepWhole(path, await fetchChecked(path));
      } catch (error) {
        console.warn(`${path} stays read by range:`, error);
      }
    }
  }

  /** @param {string} path @param {number} start @param {number} end */
  fetched(path, start, end) {
    return this.wholeFiles.has(path) || this.fetchedRanges.has(rangeKey(path, start, end));
  }

  /** Starts fetching, in parallel, the text ranges Site.prepare named (the heads and groups of chunks the
   * results will likely show) while the encoder's worker embeds the query; nothing waits for them but a
   * step that reads one (`once` shares the fetch under way). A fetch that fails here only warns: the step
   * that needs the range fails then. Returns how many it started (ranges fetched ahead before and not read
   * yet are not fetched again). @param {Ranges} ranges @returns {number} */
  readAhead(ranges) {
    const unread = ranges.filter((range) => !this.fetched(...range));
    if (unread.length) this.fetchBatch(unread).catch((error) => console.warn("Reading ahead:", error));
    return unread.length;
  }

  /** Each file's ranges in parallel; until the host has honoured a Range, a file asks once first (a host
   * that ignores Range would otherwise send the whole file once per range). @param {Ranges} wanted */
  async fetchBatch(wanted) {
    const byPath = Map.groupBy(wanted, ([path]) => path);
    await Promise.all([
      ...[...byPath].map(async ([path, ranges]) => {
        let rest = ranges;
        if (!this.rangesHonoured) {
          await this.rangeOnce(...ranges[0]);
          rest = ranges.slice(1);
        }
        if (!this.wholeFiles.has(path)) await Promise.all(rest.map((range) => this.rangeOnce(...range)));
      }),
    ]);
  }

  /** @param {string} key @param {() => Promise<void>} fetching */
  once(key, fetching) {
    let fetched = this.inFlight.get(key);
    if (!fetched) {
      fetched = fetching().finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, fetched);
    }
    return fetched;
  }

  /** @param {string} path @param {number} start @param {number} end */
  rangeOnce(path, start, end) {
    return this.once(rangeKey(path, start, end), () => this.fetchRange(path, start, end));
  }

  /** The range's bytes from a host that honours Range, or the whole file's from one that does not.
   * Each range has its own URL (the file's, with the range as its query, which static hosts ignore):
   * chromium's HTTP cache lets one request at a time work on a URL's entry, so ranges of one file came in
   * one after another, a round trip each (10,000 papers, 20 Mbit/s and 40 ms: the first query's 75
   * forward groups took 3.2 s, its rows 8 s); with their own URLs they travel in parallel and a reload
   * still finds each in the cache. @param {string} path @param {number} start @param {number} end */
  async fetchRange(path, start, end) {
    let response;
    try {
      const url = `${this.base}${path}?bytes=${start}-${end - 1}`;
      response = await this.fetch(url, { headers: { Range: `bytes=${start}-${end - 1}` } });
    } catch (error) {
      // A host that gzips even a ranged request (which asked for identity): the browser refuses the reply.
      // Take the whole file as the host sends it, kept out of the cache so no ranged read ever meets it.
      console.warn(`${path}: a ranged read failed (${error}); reading the whole file`);
      response = await this.fetch(this.base + path, { cache: "no-store" });
    }
    if (response.status !== 200 && response.status !== 206) {
      throw new Error(`${path} bytes ${start}-${end}: HTTP ${response.status}`);
    }
    const bytes = new Uint8Array(await response.arrayBuffer());
    this.count("index", bytes.length);
    if (response.status === 206) this.rangesHonoured = true;
    if (response.status === 200) this.wholeFiles.set(path, bytes);
    else this.fetchedRanges.set(rangeKey(path, start, end), bytes);
  }
}
