// The search page: starts the engine (search_client.js) with the page, exposes window.readingRoom, and
// runs the search form: searches as the visitor types, keeps the URL and history in step (router.js),
// draws results (results_view.js) and says how loading goes. Ask mode (ask.js) loads beside it.

import { byId, element } from "./dom.js";
import { FilterState } from "./filter_state.js";
import { MissingNote } from "./missing_view.js";
import { bindLanding } from "./landing.js";
import { ReadingView } from "./reading_view.js";
import { Router, currentParams, currentUrl, filtersOf, saveView, savedView } from "./router.js";
import { ResultsView, drawnReply } from "./results_view.js";
import { RESULTS_K, SearchClient } from "./search_client.js";

/** @typedef {import("./protocol.js").AppConfig} AppConfig */
/** @typedef {import("./protocol.js").ReadingRoom} ReadingRoom */

const TYPING_DELAY_MS = 250;

/** @type {AppConfig} */
const config = JSON.parse(byId("app-config").textContent);
const client = new SearchClient(config);
const state = client.state;

// Ask mode's modules load beside search; readingRoom.ask waits for them.
const askMode = import("./ask.js").then(({ startAsk }) =>
  startAsk({ config, request: client.request.bind(client), state, semanticReady: client.semantic.promise }),
);

/** @type {ReadingRoom} */
const readingRoom = {
  ready: client.keyword.promise,
  semanticReady: client.semantic.promise,
  async search(query, options) {
    return (await client.search(query, options)).hits;
  },
  async ask(question, options) {
    return (await askMode).ask(question, options);
  },
  status: () => client.status(),
};
Object.assign(window, { readingRoom });

// --- the form --------------------------------------------------------------------------------------------

const $ = byId;
const form = /** @type {HTMLFormElement} */ ($("search-form"));
const input = /** @type {HTMLInputElement} */ ($("q"));
const fields = Object.fromEntries(
  Object.entries({ year_min: "year-min", year_max: "year-max", cat: "category", tag: "tag", mode: "mode" }).map(
    ([param, id]) => [param, /** @type {HTMLSelectElement} */ ($(id))],
  ),
);
const statusLine = $("status");
const notice = $("notice");
const router = new Router(input, fields);
/** @type {ResultsView} */
const view = new ResultsView({
  results: $("results"),
  base: config.base,
  references: config.references,
  more: (k) => runSearch(currentParams(), k),
  suggestionUrl(suggestion) {
    const params = router.formParams();
    params.set("q", suggestion);
    return `${location.pathname}?${params}`;
  },
  followSuggestion(suggestion) {
    input.value = suggestion;
    router.endTyping();
    search("submit");
  },
});
view.bindKeys(input);
bindLanding(form, input);
new ReadingView({ base: config.base, request: (place) => client.request("page", place) }).bind();

// Narrow screens: filters and syntax help fold behind this toggle (style.css shows it only there).
const optionsToggle = element("button", "options-toggle", "Filters and syntax");
optionsToggle.type = "button";
optionsToggle.setAttribute("aria-expanded", "false");
optionsToggle.setAttribute("aria-controls", "search-options");
optionsToggle.addEventListener("click", () => {
  const open = form.classList.toggle("options-open");
  optionsToggle.setAttribute("aria-expanded", String(open));
});
const filters = /** @type {HTMLElement} */ (form.querySelector(".filters")); // the template's
filters.id = "search-options";
filters.before(optionsToggle);
const missingNote = new MissingNote(view.results, config.base);
const filterState = new FilterState({
  fields,
  results: view.results,
  toggle: optionsToggle,
  skip: document.querySelector("a.skip"),
  changed: () => search("filter"),
});

// --- searching -------------------------------------------------------------------------------------------

let latest = 0;
let movedOn = false; // the reader scrolled or went into the results drawn last (see upgradeToHybrid)

/** Search for the query of `params` and draw its reply, unless a later search has started meanwhile.
 * @param {URLSearchParams} params @param {number} [k] @returns {Promise<void>} */
async function runSearch(params, k = RESULTS_K) {
  const query = params.get("q") || "";
  const mine = ++latest;
  notice.hidden = true;
  filterState.draw(params, null);
  missingNote.draw([]);
  if (!query) return view.clear();
  const results = view.results;
  results.setAttribute("aria-busy", "true");
  if (!state.keyword && !state.error) {
    // Typed while the engine loads: say that it waits, and runs by itself as soon as search is ready.
    view.clear(`Search is still loading; “${query}” will run as soon as it is ready.`, "message waiting");
  }
  const mode = /** @type {import("./protocol.js").Mode} */ (params.get("mode") || "hybrid");
  try {
    if (mode === "dense" && !state.semantic && !state.semantic_error) {
      // Semantic mode has nothing to run until the encoder is up: the query waits for it, then runs.
      view.clear(`Semantic search is still loading; “${query}” will run as soon as it is ready.`, "message waiting");
      await client.semantic.promise.catch(() => {}); // a failed load: the search below says why
      if (mine !== latest) return;
    }
    const reply = await client.search(query, { k, mode, filters: filtersOf(params) });
    if (mine !== latest) return;
    const drawn = drawnReply(reply, k, mode);
    view.draw(drawn);
    drawFilterNote(params);
    filterState.draw(params, drawn.hits.length);
    missingNote.draw(drawn.missing);
    saveView({ url: currentUrl(), drawn, scrollY: 0 });
  } catch (error) {
    if (mine === latest) view.clear(/** @type {Error} */ (error).message, "message error");
  } finally {
    if (mine === latest) results.setAttribute("aria-busy", "false");
  }
}

// A menu filter and the same field typed into the query (tag:, cat:) widen each other: say so.
const filterNote = element("p", "filter-note");
filterNote.id = "filter-note";
filterNote.setAttribute("role", "note");
filterNote.hidden = true;
view.results.before(filterNote);
const MENU_FIELDS = { tag: ["tag", "Tag", "tags"], cat: ["cat", "Category", "categories"] };

/** @param {URLSearchParams} params */
function drawFilterNote(params) {
  const query = params.get("q") || "";
  const both = Object.entries(MENU_FIELDS).filter(
    ([param, [field]]) => params.get(param) && new RegExp(`(?<!\\S)${field}:\\S`, "i").test(query),
  );
  filterNote.hidden = !both.length;
  filterNote.textContent = both
    .map(([param, [field, menu, plural]]) => `The ${menu} menu (${params.get(param)}) and ${field}: in the query combine: papers with any of these ${plural} are shown.`)
    .join(" ");
}

/** @param {"typing" | "submit" | "filter"} how */
function search(how) {
  movedOn = false;
  return runSearch(router.record(how));
}

/** @type {ReturnType<typeof setTimeout> | undefined} */
let typingTimer;
input.addEventListener("input", () => {
  clearTimeout(typingTimer);
  typingTimer = setTimeout(() => search("typing"), TYPING_DELAY_MS);
});
form.addEventListener("submit", (event) => {
  event.preventDefault();
  clearTimeout(typingTimer);
  router.endTyping();
  search("submit");
});
for (const field of Object.values(fields)) field.addEventListener("change", () => search("filter"));

/** Draw the results this history entry saved, at the reader's scroll position; false when it has none.
 * @param {unknown} entry history.state */
function restore(entry) {
  const saved = savedView(entry);
  if (!saved) return false;
  view.draw(saved.drawn);
  drawFilterNote(currentParams());
  filterState.draw(currentParams(), saved.drawn.hits.length);
  missingNote.draw(saved.drawn.missing);
  window.scrollTo(0, saved.scrollY || 0);
  return true;
}

window.addEventListener("popstate", (event) => {
  router.endTyping();
  const params = currentParams();
  router.applyParams(params);
  if (!restore(event.state)) runSearch(params);
});
/** @type {ReturnType<typeof setTimeout> | undefined} */
let scrollTimer;
window.addEventListener("scroll", () => {
  clearTimeout(scrollTimer);
  scrollTimer = setTimeout(() => view.shown && saveView({ scrollY: window.scrollY }), 100);
});
window.addEventListener("pagehide", () => view.shown && saveView({ scrollY: window.scrollY }));

// "/" jumps to the query box of the mode on screen.
document.addEventListener("keydown", (event) => {
  const target = /** @type {HTMLElement} */ (event.target);
  const typing = target.closest("input, textarea, select, [contenteditable]") !== null;
  if (event.key === "/" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
    event.preventDefault();
    const box = /** @type {HTMLInputElement} */ ($("ask").hidden ? input : $("ask-q"));
    box.focus();
    box.select();
  }
});

// --- status and the semantic upgrade ---------------------------------------------------------------------

const megabytes = (/** @type {number} */ bytes) => `${(bytes / 1e6).toFixed(1)} MB`;

function statusText() {
  if (state.semantic_error && state.keyword) {
    return `Keyword search only: semantic search is unavailable (${state.semantic_error}).`;
  }
  if (state.error && state.keyword) return `Keyword search ready; semantic search could not load (${state.error}).`;
  if (state.error) return `Search could not load (${state.error}). Try reloading the page.`;
  if (state.semantic) {
    // All that came over unasked: start-up, then the index read whole once searches pause (the worker
    // counts no search's passages after start-up, so the figure is the visit's download, not a search's).
    return `Keyword and semantic search ready (${megabytes(state.bytes)} loaded).`;
  }
  if (state.keyword) return `Keyword search ready. Semantic search loading… ${megabytes(state.bytes)}`;
  return `${state.loading}… ${megabytes(state.bytes)}`;
}

function drawStatus() {
  statusLine.textContent = statusText();
  statusLine.classList.toggle("error", Boolean(state.error && !state.keyword));
}

// Keyword-only results (a shared ?q= link opened while semantic search loads) become hybrid by
// themselves when semantic search comes up, unless the reader has moved on (scrolled, or gone into the
// results): those are never reordered under them, and a button offers the update instead. A list with
// no text to embed (filters only) would not change, so it gets neither.
const readerMovedOn = () => (movedOn = true);
for (const event of ["focusin", "pointerdown", "keydown"]) view.results.addEventListener(event, readerMovedOn);
window.addEventListener("scroll", () => window.scrollY > 0 && readerMovedOn(), { passive: true });

function upgradeToHybrid() {
  const shown = view.shown;
  if (!shown || shown.semantic || !shown.embeds || fields.mode.value === "bm25") return;
  if (!movedOn) return void runSearch(currentParams(), shown.k);
  const update = element("button", null, "Update results with semantic search");
  update.type = "button";
  update.addEventListener("click", () => runSearch(currentParams(), shown.k));
  notice.replaceChildren(element("span", null, "Semantic search is ready. "), update);
  notice.hidden = false;
}

client.listen((message) => {
  if (["progress", "ready", "failed", "semantic_failed"].includes(message.type)) drawStatus();
  if (message.type === "ready" && message.which === "semantic") upgradeToHybrid();
});

// --- start -------------------------------------------------------------------------------------------------

drawStatus();
const initial = currentParams();
router.applyParams(initial);
filterState.draw(currentParams(), null); // filters a shared link set are shown before any search
if (!restore(history.state) && initial.get("q")) runSearch(initial);
