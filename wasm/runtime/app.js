// The search page: starts the engine worker with the page, exposes window.readingRoom, and draws results.
// Untrusted text (titles, authors, passages) only ever reaches the DOM through textContent.

const config = JSON.parse(document.getElementById("app-config").textContent);
const ARXIV = "https://arxiv.org";
const RESULTS_K = 20;
const TYPING_DELAY_MS = 250;

// --- the engine ------------------------------------------------------------------------------------

const worker = new Worker(config.worker, { type: "module" });
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
  python_start: null, // "boot", or "snapshot" when Python was restored from this browser's saved copy
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

worker.onmessage = ({ data }) => {
  if (data.type === "progress") {
    Object.assign(state, { loading: data.stage, bytes: data.bytes, kinds: data.kinds, python_start: data.python_start });
    setTimeline(data.timeline);
  } else if (data.type === "timeline") {
    setTimeline(data.timeline);
  } else if (data.type === "ready") {
    state[data.which] = true;
    if (data.which === "keyword") resolveReady();
    if (data.which === "semantic") {
      state.checksums_ms = data.checksums_ms; // time spent checking the data files' sha256 at start
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
    state.last_search = data.timings || null;
    if (data.error) reject(new Error(data.error));
    else resolve(data);
  }
  for (const listener of listeners) listener(data);
};
worker.onerror = (event) => {
  event.preventDefault();
  worker.onmessage({ data: { type: "failed", stage: state.loading, error: event.message || "worker error" } });
};
worker.postMessage({ type: "init", config });

async function ask(query, { k = RESULTS_K, mode = "hybrid", filters = {} } = {}) {
  await ready;
  const id = nextRequestId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    worker.postMessage({ type: "search", id, query, k, mode, filters });
  });
}

window.readingRoom = {
  ready,
  semanticReady,
  async search(query, options) {
    return (await ask(query, options)).hits;
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
const notice = document.getElementById("notice");
const results = document.getElementById("results");

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

async function runSearch(params) {
  const query = params.get("q") || "";
  const mine = ++latest;
  notice.hidden = true;
  if (!query) {
    results.replaceChildren();
    shown = null;
    return;
  }
  results.setAttribute("aria-busy", "true");
  try {
    const reply = await ask(query, { k: RESULTS_K, mode: params.get("mode") || "hybrid", filters: filtersOf(params) });
    if (mine !== latest) return;
    shown = reply;
    drawResults(reply);
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
window.addEventListener("popstate", () => {
  typingEntry = false;
  const params = new URLSearchParams(location.search);
  applyParams(params);
  runSearch(params);
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

async function copyCitation(hit, button) {
  const text = citation(hit);
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    button.textContent = text; // clipboard refused: show it to copy by hand
  }
  setTimeout(() => (button.textContent = "Copy citation"), 2000);
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
  copy.setAttribute("aria-label", `Copy citation ${citation(hit)}`);
  copy.addEventListener("click", () => copyCitation(hit, copy));
  const actions = element("p", "actions");
  actions.append(link(`${ARXIV}/abs/${hit.arxiv_id}`, "arXiv abstract"), " · ", link(pdf.href, `PDF ${pagesLabel(hit)}`), " · ", copy);
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
  const summary = reply.hits.length
    ? `${reply.hits.length} passages from ${groups.length} papers (${how} search)`
    : "No passages match. Try other words, or remove filters.";
  results.replaceChildren(element("p", "message", summary), ...groups.map(drawGroup));
}

// --- status and the semantic upgrade ---------------------------------------------------------------

function megabytes(bytes) {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

function drawStatus() {
  if (state.semantic_error && state.keyword) {
    statusLine.textContent = `Keyword search only: semantic search is unavailable (${state.semantic_error}).`;
  } else if (state.error && state.keyword) {
    statusLine.textContent = `Keyword search ready; semantic search could not load (${state.error}).`;
  } else if (state.error) {
    statusLine.textContent = `Search could not load (${state.error}). Try reloading the page.`;
    statusLine.classList.add("error");
  } else if (state.semantic) {
    statusLine.textContent = `Keyword and semantic search ready (${megabytes(state.bytes)} loaded).`;
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
    input.focus();
    input.select();
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
if (initial.get("q")) runSearch(initial);
