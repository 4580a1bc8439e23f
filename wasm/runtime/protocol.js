// The shapes that cross between the page, the search worker (worker.js), the encoder worker (encoder.js)
// and Python (readingroom_core/browser.py), and what window.readingRoom gives tests and benchmarks.
// Types only: every module names them in JSDoc, and `npm run lint --prefix wasm` (tsc --checkJs) holds
// the senders and receivers to them. Nothing here runs, so the build does not ship it.

// --- what the page knows --------------------------------------------------------------------------------

/**
 * The search page's settings, written by the build into <script id="app-config"> (builder/site/pages.py
 * SitePages.app_config): every URL is under the site's base_url.
 * @typedef {object} AppConfig
 * @property {string} base
 * @property {string} manifest
 * @property {string} worker
 * @property {string} encoder
 * @property {string} wheel
 * @property {string} python_snapshot
 * @property {string} pyodide folder of Pyodide's files, ending in "/"
 * @property {string} ort
 * @property {{mjs: string, wasm: string}} ort_wasm
 * @property {string[]} gzipped runtime URLs stored only as `<url>.gz`
 * @property {{[arxivId: string]: number}} cited how many papers of the list cite each (builder/citation_graph.py)
 * @property {string} references the references file: every paper's BibTeX and CSL-JSON (builder/site/references.py)
 * @property {number} whole_index_bytes how much of the index files read by range the worker fetches whole
 */

/** @typedef {{year_min: number | null, year_max: number | null, categories: string[], tags: string[]}} Filters */
/** @typedef {"hybrid" | "bm25" | "dense"} Mode */

/**
 * A search request as the page sends it and Site.prepare parses it (once).
 * @typedef {object} SearchRequest
 * @property {string} query
 * @property {number} k
 * @property {Mode} mode
 * @property {Partial<Filters>} filters the facets the core leaves unset where they are missing
 */

/**
 * One result (readingroom_core.browser.hit_json): `segments` are the snippet's [text, marked] runs, ready to draw.
 * @typedef {object} Hit
 * @property {number} doc_id
 * @property {string} chunk_id
 * @property {string} arxiv_id
 * @property {string} version the version the site indexed ("v2"; "" where the site does not say)
 * @property {string} title
 * @property {string[]} authors
 * @property {number | null} year
 * @property {number} page_start
 * @property {number} page_end
 * @property {string} section
 * @property {number} score
 * @property {{bm25: number | null, dense: number | null}} ranks
 * @property {string} snippet
 * @property {Array<[string, boolean]>} segments
 */

/**
 * What the worker measured of one search: the embedding's wait, the core's time after it, the work done
 * while the encoder ran, and whether the vector came from the worker's cache.
 * @typedef {object} SearchTimings
 * @property {number} embed_ms
 * @property {number} search_ms
 * @property {number} ahead_ms
 * @property {number} texts_ahead
 * @property {number} python_memory_bytes the size of Python's WebAssembly memory after the search
 * @property {boolean} [vector_cached]
 */

/**
 * What Site.search answers for a prepared search.
 * @typedef {object} CoreSearchReply
 * @property {Hit[]} hits
 * @property {boolean} weak no passage matches the query's words and none is close in meaning
 * @property {string | null} suggestion the query respelled with the corpus's own words
 * @property {boolean} embeds whether the query has text to embed (a filter-only list is the same with or
 *   without semantic search)
 * @property {MissingWork[]} missing the works the list cites but does not hold that the query names
 */

/**
 * A work the list cites and lacks (readingroom_core/readers/missing.py, browser.Site.missing_json).
 * @typedef {object} MissingWork
 * @property {string | null} arxiv_id
 * @property {string} title
 * @property {string[]} names what the citing papers call it ("Chinchilla")
 * @property {Array<{arxiv_id: string, title: string, page: number | null}>} cited_by the list's papers citing it
 */

/**
 * The worker's reply to a search: the core's, with whether the dense side took part and the timings.
 * @typedef {CoreSearchReply & {semantic: boolean, timings: SearchTimings}} SearchReply
 */

/**
 * A request the core or the worker refused, in one line; `damaged` names the data file at fault when the
 * site's passage texts failed their checksum (the search cannot show its passages until a rebuild).
 * @typedef {{error: string, damaged?: string}} ErrorReply
 */

/**
 * A source card of Ask mode (readingroom_core.answers), with its paper's metadata for the exports.
 * @typedef {object} Source
 * @property {number} n
 * @property {string} arxiv_id
 * @property {string} version the version the site holds ("v2"), which a versioned citation must name; "" when
 *   the site does not say
 * @property {string} chunk_id
 * @property {string} title
 * @property {number} page_start
 * @property {number} page_end
 * @property {string} label its pages as a citation names them ("p.7", "pp.7-8")
 * @property {string} section
 * @property {string} text
 * @property {string[]} authors
 * @property {number | null} year
 * @property {string[]} categories
 */

/** A chat message of the prompt. @typedef {{role: string, content: string}} ChatMessage */
/** @typedef {{system: string, messages: ChatMessage[], text: string}} Prompt text: the whole prompt, to copy */
/** The sources' pages and their neighbours by paper, then page number ("7"). @typedef {{[arxivId: string]: {[page: string]: string}}} PageTexts */

/**
 * @typedef {object} EvidenceReply
 * @property {string} question
 * @property {string} retrieval_query what was searched (and embedded): a follow-up carries the previous question
 * @property {Source[]} sources
 * @property {PageTexts} pages the cited pages' text, which verification reads
 * @property {Prompt} prompt
 * @property {number} prompt_tokens the prompt's estimated tokens (readingroom_core.tokens)
 * @property {number} budget
 * @property {number} left_out candidates that did not fit the budget
 * @property {number} answer_tokens the answer cap to send: the room left for it in the context window
 */

/**
 * One checked citation (readingroom_core.citations): offsets are code points into the answer.
 * @typedef {object} Citation
 * @property {string} arxiv_id as the answer wrote it, with the version where it named one
 * @property {string} [version] the version the site holds, for links ("" when the id names its own)
 * @property {number} page
 * @property {number} page_end
 * @property {number | null} found_page the page holding the quote's start, for a PDF link
 * @property {string} quote
 * @property {boolean} verified
 * @property {string} reason
 * @property {string} status verified, invented, outside_sources, no_page, version_not_found, page_not_found, no_quote
 *   or quote_not_found
 * @property {number | null} source 1-based number of the source card it was checked against
 * @property {[number, number] | null} highlight the quote's code-point range in that card's text
 * @property {number} start
 * @property {number} end
 */

/** A sentence of the answer that cites nothing. @typedef {{text: string, start: number, end: number}} Uncited */

/**
 * @typedef {object} VerifyReply
 * @property {Citation[]} citations
 * @property {Uncited[]} uncited
 * @property {number} verified how many citations verified
 * @property {number} total
 * @property {string} summary "7 of 8 citations verified"
 */

/**
 * A page of a paper's text for the reading view (readingroom_core.in_context.page_in_context).
 * @typedef {object} PageReply
 * @property {string} arxiv_id
 * @property {string} version "v2", or "" where unknown
 * @property {string} title
 * @property {string[]} authors
 * @property {number | null} year
 * @property {number} page
 * @property {number} first the paper's first page with text
 * @property {number} last its last page with text
 * @property {number | null} prev the page with text before this one
 * @property {number | null} next
 * @property {Array<[string, boolean]>} segments the page's text as [text, marked] runs
 * @property {boolean} marked whether the passage or quote was found on this page
 */

// --- manifest.json (builder/site/data.py writes it, readingroom_core/formats/manifest.py reads all of it) --------

/**
 * The data files by role, as site paths. The workers fetch some (the rest the core reads); a list without
 * a paper view has no paper_vectors, and a site without a forward index reads the postings by range only.
 * @typedef {object} ManifestFiles
 * @property {string} papers
 * @property {string} paper_table
 * @property {string} chunks
 * @property {string} postings
 * @property {string} [forward_index]
 * @property {string} texts
 * @property {string} text_dictionary
 * @property {string} dense
 * @property {string} [paper_vectors]
 * @property {string} encoder
 * @property {string} word_pieces
 * @property {string} vocab
 * @property {string} char_classes
 * @property {string} graph
 * @property {string} [missing] the works the list cites and lacks (formats/missing.py)
 */

/** A data file with its size and sha256, checked before use. @typedef {{path: string, bytes: number, sha256: string}} Artifact */

/**
 * What the workers read of manifest.json.
 * @typedef {object} Manifest
 * @property {ManifestFiles} files
 * @property {Artifact[]} artifacts
 */

// --- page -> search worker --------------------------------------------------------------------------------

/**
 * @typedef {{type: "init", config: AppConfig, port: MessagePort, save_data: boolean}} InitMessage save_data: the page's navigator.connection.saveData (a worker's may not follow the browser's setting)
 * @typedef {{type: "encoder_failed", error: string}} EncoderFailedMessage the page saw encoder.js fail to load
 * @typedef {SearchRequest & {type: "search", id: number}} SearchMessage
 * @typedef {{type: "evidence", id: number, question: string, history: Array<{question: string, answer: string}>, budget: number | null, context?: number | null, max_tokens?: number, model?: string}} EvidenceMessage
 * @typedef {{type: "verify", id: number, answer: string, evidence: {sources: Source[], pages: PageTexts | null}}} VerifyMessage
 * @typedef {{type: "page", id: number, arxiv_id: string, page: number, chunk_id?: string, quote?: string}} PageMessage
 * @typedef {SearchMessage | EvidenceMessage | VerifyMessage | PageMessage} WorkerRequest answered by one ResultMessage of the same id
 * @typedef {InitMessage | EncoderFailedMessage | WorkerRequest} ToSearchWorker
 * @typedef {{search: SearchMessage, evidence: EvidenceMessage, verify: VerifyMessage, page: PageMessage}} RequestsByType
 * @typedef {{search: SearchReply, evidence: EvidenceReply, verify: VerifyReply, page: PageReply}} RepliesByType
 */

// --- search worker -> page ------------------------------------------------------------------------------

/**
 * Start-up byte counts by kind of file ("data", "pyodide", "model", ...), from either worker.
 * @typedef {{[kind: string]: number}} ByteCounts
 * @typedef {{[step: string]: number}} Timeline start-up step -> epoch ms when it finished
 * @typedef {{type: "progress", source: "search", stage: string, kinds: ByteCounts, timeline: Timeline, python_start: "snapshot" | "boot" | null}} SearchProgressMessage
 * @typedef {{type: "ready", which: "keyword"}} KeywordReadyMessage
 * @typedef {{type: "ready", which: "semantic", checksums_ms: number}} SemanticReadyMessage
 * @typedef {{type: "semantic_failed", error: string}} SemanticFailedMessage semantic search is off for good; keyword search goes on
 * @typedef {{type: "failed", stage: string, error: string}} FailedMessage search could not start
 * @typedef {{type: "result", id: number, reply: SearchReply | EvidenceReply | VerifyReply | PageReply} | {type: "result", id: number, error: string}} ResultMessage
 * @typedef {{type: "timeline", timeline: Timeline}} TimelineMessage steps after start-up (index files read whole)
 * @typedef {SearchProgressMessage | KeywordReadyMessage | SemanticReadyMessage | SemanticFailedMessage | FailedMessage | ResultMessage | TimelineMessage} FromSearchWorker
 */

// --- encoder worker <-> page and search worker ------------------------------------------------------------

/**
 * @typedef {{type: "progress", source: "encoder", kinds: ByteCounts, timeline: Timeline}} EncoderProgressMessage
 * @typedef {{type: "go", after_ms: number}} EncoderGoMessage start downloading in `after_ms` (0: now)
 * @typedef {{type: "session"}} EncoderSessionMessage keyword search is up: create the session
 * @typedef {{type: "embed", id: number, ids: Int32Array, codes: Int8Array, scales: Float32Array}} EmbedMessage
 *   the query's WordPiece ids, and their rows of the word-piece table (Site.word_piece_rows): codes and scales
 * @typedef {EncoderGoMessage | EncoderSessionMessage | EmbedMessage} ToEncoder
 * @typedef {{type: "started", checksums_ms: number}} EncoderStartedMessage
 * @typedef {{type: "failed", error: string}} EncoderFailedToStartMessage
 * @typedef {{type: "vector", id: number, vector: Float32Array} | {type: "vector", id: number, error: string}} VectorMessage
 * @typedef {EncoderStartedMessage | EncoderFailedToStartMessage | VectorMessage} FromEncoder
 */

// --- the Python boundary (readingroom_core.browser, through Pyodide) ----------------------------------------

/** Byte ranges of site files, [path, start, end] with the end exclusive. @typedef {[string, number, number][]} Ranges */

/**
 * What Site.prepare answers: the id to finish the search with and the text ranges to read ahead, or why not.
 * @typedef {{search: number, read_ahead: Ranges}} PreparedSearch
 * @typedef {PreparedSearch | ErrorReply} Prepared
 */

/**
 * A Python object seen from JavaScript: its bytes or list as JavaScript's, then let go.
 * @template T
 * @typedef {object} PyProxy
 * @property {() => T} toJs
 * @property {() => void} destroy
 */

/**
 * The opened site (readingroom_core.browser.Site). Strings are JSON; vectors and products typed arrays.
 * @typedef {object} Site
 * @property {(requestJson: string) => string} prepare JSON of a Prepared
 * @property {(searchId: number, vector?: Float32Array) => string} search JSON of a CoreSearchReply or ErrorReply; no
 *   vector is undefined, never null (Pyodide hands null to Python as JsNull, not None)
 * @property {(requestJson: string, vector?: Float32Array) => void} dense_ahead the request's dense side, read
 *   while prepare's keyword side still reads
 * @property {(searchId: number) => void} discard
 * @property {() => void} load_semantic
 * @property {() => string} ranged_files JSON string[]: the index files read by range
 * @property {(query: string) => PyProxy<number[]>} encode_ids a Python list of token ids
 * @property {(idsJson: string) => PyProxy<Uint8Array>} word_piece_rows Python bytes: the ids' int8 codes, then
 *   their float32 scales
 * @property {(requestJson: string) => string} ask_retrieval_query the text to embed for a question (not JSON)
 * @property {(requestJson: string, vector?: Float32Array) => string} ask_evidence JSON of an EvidenceReply or ErrorReply
 * @property {(requestJson: string) => string} verify_answer JSON of a VerifyReply
 * @property {(requestJson: string) => string} page_in_context JSON of a PageReply or ErrorReply
 */

/**
 * The module readingroom_core.browser.
 * @typedef {object} Core
 * @property {(read: (path: string) => Uint8Array, manifestText: string, readRange: (path: string, start: number, end: number) => Uint8Array, announce: (rangesJson: string) => void) => Site} open_site
 *   announce hears JSON Ranges before the core reads them
 * @property {(data: Uint8Array) => Uint8Array} gunzipped
 * @property {(data: Uint8Array) => string} sha256_hex
 */

// --- window.readingRoom ---------------------------------------------------------------------------------------

/**
 * What the page knows of its loading and its latest search (readingRoom.status(), a copy).
 * @typedef {object} Status
 * @property {boolean} keyword keyword search is ready
 * @property {boolean} semantic semantic search is ready
 * @property {string | null} semantic_error why semantic search is off (keyword search goes on)
 * @property {string | null} loading the start-up stage, null once it has ended
 * @property {number} bytes start-up bytes of both workers, all kinds
 * @property {ByteCounts} kinds
 * @property {string | null} error why search could not start
 * @property {SearchTimings | null} last_search
 * @property {Timeline} timeline start-up step -> ms since navigation
 * @property {"snapshot" | "boot" | null} python_start
 * @property {number} [checksums_ms] time spent checking the start-up files' sha256
 * @property {AskTimings | null} last_ask of the latest question
 */

/** How long the latest question's steps took, in ms. @typedef {{sources_ms?: number, first_text_ms?: number, answer_ms?: number, verify_ms?: number}} AskTimings */

/**
 * @typedef {object} SearchOptions
 * @property {number} [k]
 * @property {Mode} [mode]
 * @property {Partial<Filters>} [filters]
 */

/**
 * readingRoom.ask's provider; without one, the settings panel's.
 * @typedef {object} AskOptions
 * @property {string} [provider] a preset's name (providers.js PRESETS), or "openai-compatible"
 * @property {string} [base_url]
 * @property {string} [model]
 * @property {string} [key]
 * @property {number} [budget] prompt tokens
 * @property {number | null} [context] the model's context window
 * @property {number} [max_tokens] the answer cap
 */

/** A citation as readingRoom.ask gives it. @typedef {Pick<Citation, "arxiv_id" | "version" | "page" | "quote" | "verified" | "reason">} AskCitation */
/** @typedef {Pick<Source, "arxiv_id" | "version" | "page_start" | "page_end" | "chunk_id" | "title" | "text" | "authors" | "year" | "categories">} AskSource */

/**
 * What readingRoom.ask resolves to (ask_turn.js Turn.result), and what the exports are made from.
 * @typedef {object} AskResult
 * @property {string} question
 * @property {string} answer
 * @property {string} stop_reason why the model stopped: "length" at the answer cap, "" when it did not say
 * @property {AskCitation[]} citations
 * @property {AskSource[]} sources
 */

/**
 * @typedef {object} ReadingRoom
 * @property {Promise<void>} ready keyword search is up
 * @property {Promise<void>} semanticReady semantic search is up (rejects when it cannot be)
 * @property {(query: string, options?: SearchOptions) => Promise<Hit[]>} search
 * @property {(question: string, options?: AskOptions) => Promise<AskResult>} ask Ask mode's turn, resolved with its data
 * @property {() => Status} status
 */

export {};
