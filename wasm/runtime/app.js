// The search page: starts the engine worker with the page, exposes window.readingRoom, and draws results.
// Untrusted text (titles, authors, passages) only ever reaches the DOM through textContent.

const config = JSON.parse(document.getElementById("app-config").textContent);
const ARXIV = "https://arxiv.org";
const RESULTS_K = 20;
const MORE_K = 20; // "More results" asks for this many more passages, up to MAX_K
const MAX_K = 200;
const TYPING_DELAY_MS = 250;

// --- the engine ------------------------------------------------------------------------------------

const worker = new Worker(config.worker, { type: "module" });
// The query encoder's worker (encoder.js) starts beside it, on a core of its own; the two talk through
// a channel, and both tell the page how their downloads go.
const encoder = new Worker(config.encoder, { type: "module" });
const downloads = {}; // worker ("search", "encoder") -> bytes by kind of file
const state = {
  keyword: false,
  semantic: false,
  semantic_error: null, // why semantic search is off (damaged site data, say); keyword search goes on
  loading: "starting",
  bytes: 0,
  kinds: {},
  error: null,
  last_search: null, // {embed_ms, search_ms} of the latest search, measured in the worker
  timeline: {}, // start-up step -> ms since navigation, when the worker finished it
  python_start: null, // "snapshot" when Python was restored from the build's snapshot, else "boot"
  last_ask: null, // {sources_ms, first_text_ms, answer_ms, verify_ms} of the latest question, from pressing Ask
};
const pending = new Map();
let nextRequestId = 1;
const listeners = new Set();
let resolveReady, rejectReady, resolveSemantic, rejectSemantic;
const ready = new Promise((resolve, reject) => ((resolveReady = resolve), (rejectReady = reject)));
const semanticReady = new Promise((resolve, reject) => ((resolveSemantic = resolve), (rejectSemantic = reject)));
// The status line reports a failure; a page that never awaits these must not log unhandled rejections.
ready.catch(() => {});
semanticReady.catch(() => {});

function setTimeline(epochMsByStep) {
  for (const [step, epochMs] of Object.entries(epochMsByStep)) {
    state.timeline[step] = Math.round(epochMs - performance.timeOrigin);
  }
}

function countDownloads(source, kinds) {
  downloads[source] = kinds;
  state.kinds = {};
  for (const byKind of Object.values(downloads)) {
    for (const [kind, n] of Object.entries(byKind)) state.kinds[kind] = (state.kinds[kind] || 0) + n;
  }
  state.bytes = Object.values(state.kinds).reduce((sum, n) => sum + n, 0);
}

worker.onmessage = ({ data }) => {
  if (data.type === "progress") {
    Object.assign(state, { loading: data.stage, python_start: data.python_start });
    countDownloads(data.source, data.kinds);
    setTimeline(data.timeline);
  } else if (data.type === "timeline") {
    setTimeline(data.timeline);
  } else if (data.type === "ready") {
    state[data.which] = true;
    if (data.which === "keyword") resolveReady();
    if (data.which === "semantic") {
      state.checksums_ms = data.checksums_ms; // time spent checking the data files' sha256 at start
      state.row_products = data.row_products; // the HNSW search's dot products come from typed arrays
      state.loading = null;
      resolveSemantic();
    }
  } else if (data.type === "semantic_failed") {
    state.semantic = false;
    state.semantic_error = data.error;
    state.loading = null;
    rejectSemantic(new Error(data.error));
  } else if (data.type === "failed") {
    state.error = `${data.stage}: ${data.error}`;
    state.loading = null;
    rejectReady(new Error(state.error));
    rejectSemantic(new Error(state.error));
  } else if (data.type === "result") {
    const { resolve, reject } = pending.get(data.id);
    pending.delete(data.id);
    if (data.timings) state.last_search = data.timings;
    if (data.error) reject(new Error(data.error));
    else resolve(data);
  }
  for (const listener of listeners) listener(data);
};
worker.onerror = (event) => {
  event.preventDefault();
  worker.onmessage({ data: { type: "failed", stage: state.loading, error: event.message || "worker error" } });
};
encoder.onmessage = ({ data }) => {
  if (data.type !== "progress") return;
  countDownloads(data.source, data.kinds);
  setTimeline(data.timeline);
  for (const listener of listeners) listener(data);
};
encoder.onerror = (event) => {
  event.preventDefault();
  worker.postMessage({ type: "encoder_failed", error: `the query encoder did not load (${event.message || "worker error"})` });
};
const channel = new MessageChannel();
worker.postMessage({ type: "init", config, port: channel.port1 }, [channel.port1]);
encoder.postMessage({ type: "init", config, port: channel.port2 }, [channel.port2]);

/** One request to the worker ("search", "evidence", "verify"), answered by a "result" message. */
async function callWorker(type, request) {
  await ready;
  const id = nextRequestId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    worker.postMessage({ ...request, type, id });
  });
}

function ask(query, { k = RESULTS_K, mode = "hybrid", filters = {} } = {}) {
  return callWorker("search", { query, k, mode, filters });
}

// Ask mode (ask.js and its modules) loads beside search; readingRoom.ask waits for it.
const askMode = import(config.ask).then(({ startAsk }) => startAsk({ config, callWorker, state }));

window.readingRoom = {
  ready,
  semanticReady,
  async search(query, options) {
    return (await ask(query, options)).hits;
  },
  async ask(question, options) {
    return (await askMode).ask(question, options);
  },
  status: () => ({ ...state, kinds: { ...state.kinds }, timeline: { ...state.timeline } }),
};

// --- the form and the URL ------------------------------------------------------------------------

const form = document.getElementById("search-form");
const input = document.getElementById("q");
const fields = {
  year_min: document.getElementById("year-min"),
  year_max: document.getElementById("year-max"),
  cat: document.getElementById("category"),
  tag: document.getElementById("tag"),
  mode: document.getElementById("mode"),
};
const statusLine = document.getElementById("status");

// Narrow screens: filters and syntax help fold behind this toggle (style.css shows it only there).
const optionsToggle = element("button", "options-toggle", "Filters and syntax");
optionsToggle.type = "button";
optionsToggle.setAttribute("aria-expanded", "false");
optionsToggle.setAttribute("aria-controls", "search-options");
optionsToggle.addEventListener("click", () => {
  const open = form.classList.toggle("options-open");
  optionsToggle.setAttribute("aria-expanded", String(open));
});
form.querySelector(".filters").id = "search-options";
form.querySelector(".filters").before(optionsToggle);
const notice = document.getElementById("notice");
const results = document.getElementById("results");
// The result count is announced: a live region that exists before its first update (screen readers
// ignore live regions inserted together with their text).
const announcer = element("p", "visually-hidden");
announcer.id = "result-count";
announcer.setAttribute("aria-live", "polite");
results.before(announcer);

function formParams() {
  const params = new URLSearchParams();
  if (input.value.trim()) params.set("q", input.value.trim());
  for (const [name, field] of Object.entries(fields)) {
    if (field.value && !(name === "mode" && field.value === "hybrid")) params.set(name, field.value);
  }
  return params;
}

function applyParams(params) {
  input.value = params.get("q") || "";
  for (const [name, field] of Object.entries(fields)) {
    const value = params.get(name) || (name === "mode" ? "hybrid" : "");
    field.value = [...field.options].some((option) => option.value === value) ? value : field.options[0].value;
  }
}

function filtersOf(params) {
  const year = (name) => (params.get(name) ? Number(params.get(name)) : null);
  return {
    year_min: year("year_min"),
    year_max: year("year_max"),
    categories: params.get("cat") ? [params.get("cat")] : [],
    tags: params.get("tag") ? [params.get("tag")] : [],
  };
}

// Typing replaces its own history entry as the query grows; a submitted query or a filter change adds
// one, so Back steps through what the visitor actually looked at.
let typingEntry = false;

function recordUrl(params, how) {
  const url = `${location.pathname}${params.toString() ? "?" + params : ""}`;
  if (url === `${location.pathname}${location.search}`) return;
  if (how === "typing" && typingEntry) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  typingEntry = how === "typing";
}

// --- searching -------------------------------------------------------------------------------------

let latest = 0;
let shown = null; // the reply on screen

// Back from a paper must find the reader's place: the reply on screen and the scroll position live in
// this history entry's state, so returning draws them at once instead of searching again keyword-only.
history.scrollRestoration = "manual";

function remember(changes) {
  history.replaceState({ ...(history.state || {}), ...changes }, "");
}

function restoreFrom(entry, params) {
  const saved = entry && entry.reply;
  if (!saved || entry.url !== `${location.pathname}${location.search}` || !params.get("q")) return false;
  shown = saved;
  drawResults(saved);
  window.scrollTo(0, entry.scrollY || 0);
  return true;
}

let scrollTimer;
window.addEventListener("scroll", () => {
  clearTimeout(scrollTimer);
  scrollTimer = setTimeout(() => shown && remember({ scrollY: window.scrollY }), 100);
});
window.addEventListener("pagehide", () => shown && remember({ scrollY: window.scrollY }));

async function runSearch(params, k = RESULTS_K) {
  const query = params.get("q") || "";
  const mine = ++latest;
  notice.hidden = true;
  if (!query) {
    results.replaceChildren();
    shown = null;
    return;
  }
  results.setAttribute("aria-busy", "true");
  if (!state.keyword && !state.error) {
    // Typed while the engine loads: say that it waits, and runs by itself as soon as search is ready.
    results.replaceChildren(element("p", "message waiting", `Search is still loading; “${query}” will run as soon as it is ready.`));
  }
  try {
    const reply = await ask(query, { k, mode: params.get("mode") || "hybrid", filters: filtersOf(params) });
    reply.k = k;
    if (mine !== latest) return;
    shown = reply;
    drawResults(reply);
    remember({ url: `${location.pathname}${location.search}`, reply, scrollY: 0 });
  } catch (error) {
    if (mine !== latest) return;
    shown = null;
    results.replaceChildren(element("p", "message error", error.message));
  } finally {
    if (mine === latest) results.setAttribute("aria-busy", "false");
  }
}

function search(how) {
  const params = formParams();
  recordUrl(params, how);
  return runSearch(params);
}

let typingTimer;
input.addEventListener("input", () => {
  clearTimeout(typingTimer);
  typingTimer = setTimeout(() => search("typing"), TYPING_DELAY_MS);
});
form.addEventListener("submit", (event) => {
  event.preventDefault();
  clearTimeout(typingTimer);
  typingEntry = false;
  search("submit");
});
for (const field of Object.values(fields)) field.addEventListener("change", () => search("filter"));
window.addEventListener("popstate", (event) => {
  typingEntry = false;
  const params = new URLSearchParams(location.search);
  applyParams(params);
  if (!restoreFrom(event.state, params)) runSearch(params);
});

// --- drawing -------------------------------------------------------------------------------------

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function link(href, text, className) {
  const anchor = element("a", className, text);
  anchor.href = href;
  return anchor;
}

function pagesLabel(hit) {
  return hit.page_start === hit.page_end ? `p.${hit.page_start}` : `pp.${hit.page_start}-${hit.page_end}`;
}

function citation(hit) {
  return `[arXiv:${hit.arxiv_id} ${pagesLabel(hit)}]`;
}

function authorsLabel(authors) {
  return authors.length > 3 ? `${authors.slice(0, 3).join(", ")} et al.` : authors.join(", ");
}

function groupByPaper(hits) {
  const groups = new Map();
  for (const hit of hits) {
    if (!groups.has(hit.arxiv_id)) groups.set(hit.arxiv_id, []);
    groups.get(hit.arxiv_id).push(hit);
  }
  return [...groups.values()];
}

function drawSnippet(runs) {
  const paragraph = element("p", "snippet");
  for (const [text, marked] of runs) paragraph.append(marked ? element("mark", null, text) : text);
  return paragraph;
}

// What "Copy citation" gives: the page citation, then who wrote what, when, so a pasted quote stands alone.
function fullCitation(hit) {
  const who = authorsLabel(hit.authors || []);
  return `${citation(hit)} ${[who, hit.year ? `(${hit.year})` : ""].filter(Boolean).join(" ")}. ${hit.title}. arXiv:${hit.arxiv_id}, ${pagesLabel(hit)}.`;
}

function bibtexKey(hit) {
  const surname = ((hit.authors || [""])[0].trim().split(/\s+/).pop() || "arxiv").toLowerCase();
  const word = (hit.title.toLowerCase().match(/[a-z0-9]{4,}/) || [""])[0];
  return `${surname.normalize("NFKD").replace(/[^a-z0-9]/g, "")}${hit.year || ""}${word}`;
}

function bibtex(hit) {
  const braces = (text) => String(text).replace(/[{}]/g, "");
  const fields = [
    ["title", `{${braces(hit.title)}}`],
    ["author", braces((hit.authors || []).join(" and "))],
    ["year", hit.year || ""],
    ["eprint", hit.arxiv_id],
    ["archivePrefix", "arXiv"],
    ["url", `${ARXIV}/abs/${hit.arxiv_id}`],
    ["note", `cited at ${pagesLabel(hit)}`],
  ].filter(([, value]) => value !== "");
  return `@misc{${bibtexKey(hit)},\n${fields.map(([name, value]) => `  ${name} = {${value}}`).join(",\n")}\n}`;
}

async function copyText(text, button) {
  const label = button.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    button.textContent = text; // clipboard refused: show it to copy by hand
  }
  setTimeout(() => (button.textContent = label), 2000);
}

function drawHit(hit) {
  const item = element("li", "hit");
  item.tabIndex = -1;
  item.dataset.arxivId = hit.arxiv_id;
  item.dataset.page = String(hit.page_start);
  item.dataset.chunkId = hit.chunk_id;
  const where = element("p", "where");
  const pdf = link(`${ARXIV}/pdf/${hit.arxiv_id}#page=${hit.page_start}`, pagesLabel(hit), "pdf-link");
  where.append(pdf);
  if (hit.section) where.append(" · ", element("span", "section", hit.section));
  const copy = element("button", "copy", "Copy citation");
  copy.type = "button";
  copy.setAttribute("aria-label", `Copy citation ${citation(hit)} with title`);
  copy.addEventListener("click", () => copyText(fullCitation(hit), copy));
  const copyBibtex = element("button", "copy-bibtex", "BibTeX");
  copyBibtex.type = "button";
  copyBibtex.setAttribute("aria-label", `Copy a BibTeX entry for arXiv:${hit.arxiv_id}`);
  copyBibtex.addEventListener("click", () => copyText(bibtex(hit), copyBibtex));
  const actions = element("p", "actions");
  actions.append(link(`${ARXIV}/abs/${hit.arxiv_id}`, "arXiv abstract"), " · ", link(pdf.href, `PDF ${pagesLabel(hit)}`), " · ", copy, " ", copyBibtex);
  item.append(where, drawSnippet(hit.segments), actions);
  return item;
}

function drawGroup(hits) {
  const first = hits[0];
  const group = element("article", "paper-group");
  group.dataset.arxivId = first.arxiv_id;
  const heading = element("h2");
  heading.append(link(`${config.base}papers/${first.arxiv_id.replaceAll("/", "_")}/`, first.title));
  const meta = element("p", "meta", [authorsLabel(first.authors), first.year, `arXiv:${first.arxiv_id}`].filter(Boolean).join(" · "));
  const list = element("ol", "hits");
  list.append(...hits.map(drawHit));
  group.append(heading, meta, list);
  return group;
}

function drawResults(reply) {
  const groups = groupByPaper(reply.hits);
  const how = reply.semantic ? "keyword + semantic" : "keyword";
  const summary = !reply.hits.length
    ? "No passages match. Try other words, or remove filters."
    : reply.weak
      ? `Nothing matches these words well. The ${reply.hits.length} passages below are only the nearest in meaning (${how} search).`
      : `${reply.hits.length} passages from ${groups.length} papers (${how} search)`;
  announcer.textContent = summary;
  const drawn = [element("p", "message", summary)];
  if (reply.suggestion) drawn.push(drawSuggestion(reply.suggestion));
  if (groups.length > 1) drawn.push(drawSortChoice());
  const byDate = new URLSearchParams(location.search).get("sort") === "date";
  // Newest paper first, keeping the ranked order of passages inside each paper (and of equal years).
  const ordered = byDate ? [...groups].sort((a, b) => (b[0].year || 0) - (a[0].year || 0)) : groups;
  drawn.push(...ordered.map(drawGroup));
  const k = reply.k || RESULTS_K;
  if (reply.hits.length >= k && k < MAX_K) drawn.push(drawMore(k));
  results.replaceChildren(...drawn);
}

function drawSortChoice() {
  const line = element("p", "sort");
  const label = element("label", null, "Sort papers by ");
  const select = element("select");
  select.id = "sort";
  for (const [value, text] of [["", "relevance"], ["date", "date, newest first"]]) {
    const option = element("option", null, text);
    option.value = value;
    select.append(option);
  }
  select.value = new URLSearchParams(location.search).get("sort") || "";
  select.addEventListener("change", () => {
    const params = new URLSearchParams(location.search);
    if (select.value) params.set("sort", select.value);
    else params.delete("sort");
    history.replaceState(history.state, "", `${location.pathname}?${params}`);
    remember({ url: `${location.pathname}${location.search}` });
    drawResults(shown);
    document.getElementById("sort").focus();
  });
  label.append(select);
  line.append(label);
  return line;
}

function drawMore(k) {
  const button = element("button", "more", "More results");
  button.type = "button";
  button.addEventListener("click", async () => {
    const count = hitElements().length;
    await runSearch(new URLSearchParams(location.search), Math.min(k + MORE_K, MAX_K));
    const next = hitElements()[count];
    if (next) next.focus(); // the reader goes on where the new passages begin
  });
  return button;
}

// "Did you mean": the corpus's own spelling of words it never uses, one click (or Enter) away.
function drawSuggestion(suggestion) {
  const line = element("p", "suggestion", "Did you mean ");
  const params = formParams();
  params.set("q", suggestion);
  const anchor = link(`${location.pathname}?${params}`, suggestion);
  anchor.addEventListener("click", (event) => {
    event.preventDefault();
    input.value = suggestion;
    typingEntry = false;
    search("submit");
  });
  line.append(anchor, "?");
  return line;
}

// --- status and the semantic upgrade ---------------------------------------------------------------

function megabytes(bytes) {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

let startupBytes = null;

function drawStatus() {
  if (state.semantic_error && state.keyword) {
    statusLine.textContent = `Keyword search only: semantic search is unavailable (${state.semantic_error}).`;
  } else if (state.error && state.keyword) {
    statusLine.textContent = `Keyword search ready; semantic search could not load (${state.error}).`;
  } else if (state.error) {
    statusLine.textContent = `Search could not load (${state.error}). Try reloading the page.`;
    statusLine.classList.add("error");
  } else if (state.semantic) {
    // The start-up download, fixed when it ended: passages fetched by later searches are not loading.
    startupBytes ??= state.bytes;
    statusLine.textContent = `Keyword and semantic search ready (${megabytes(startupBytes)} loaded).`;
  } else if (state.keyword) {
    statusLine.textContent = `Keyword search ready. Semantic search loading… ${megabytes(state.bytes)}`;
  } else {
    statusLine.textContent = `${state.loading}… ${megabytes(state.bytes)}`;
  }
}

// Results on screen are never reordered under the reader: a button offers the semantic re-rank.
function offerRerank() {
  if (!shown || shown.semantic || fields.mode.value === "bm25") return;
  const button = element("button", null, "Update results with semantic search");
  button.type = "button";
  button.addEventListener("click", () => runSearch(new URLSearchParams(location.search)));
  notice.replaceChildren(element("span", null, "Semantic search is ready. "), button);
  notice.hidden = false;
}

listeners.add((message) => {
  if (["progress", "ready", "failed", "semantic_failed"].includes(message.type)) drawStatus();
  if (message.type === "ready" && message.which === "semantic") offerRerank();
});

// --- keyboard --------------------------------------------------------------------------------------

function hitElements() {
  return [...results.querySelectorAll(".hit")];
}

function isTyping(target) {
  return target.closest("input, textarea, select, [contenteditable]") !== null;
}

document.addEventListener("keydown", (event) => {
  if (event.key === "/" && !isTyping(event.target) && !event.ctrlKey && !event.metaKey && !event.altKey) {
    event.preventDefault();
    const box = document.getElementById("ask").hidden ? input : document.getElementById("ask-q"); // the mode's own box
    box.focus();
    box.select();
  }
});

input.addEventListener("keydown", (event) => {
  if (event.key === "ArrowDown" && hitElements().length) {
    event.preventDefault();
    hitElements()[0].focus();
  }
});

results.addEventListener("keydown", (event) => {
  const hits = hitElements();
  const index = hits.indexOf(event.target);
  if (index < 0) return;
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    event.preventDefault();
    const next = index + (event.key === "ArrowDown" ? 1 : -1);
    if (next < 0) input.focus();
    else hits[Math.min(next, hits.length - 1)].focus();
  } else if (event.key === "Enter") {
    event.preventDefault();
    event.target.querySelector(".pdf-link").click();
  } else if (event.key === "Escape") {
    input.focus();
  }
});

// --- start ---------------------------------------------------------------------------------------

drawStatus();
const initial = new URLSearchParams(location.search);
applyParams(initial);
if (!restoreFrom(history.state, initial) && initial.get("q")) runSearch(initial);
