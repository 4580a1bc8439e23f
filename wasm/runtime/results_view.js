// The results list: passages grouped by paper, each with its page link, snippet and citation buttons;
// the summary line (announced to screen readers), "Did you mean", sorting, "More results", and moving
// through the passages by keyboard. Untrusted text only ever reaches the DOM through textContent.

import { absUrl, authorsLabel, fullCitation, pageCitation, pagesLabel, paperPageUrl, pdfUrl, versionedId } from "./citation.js";
import { listToggle } from "./my_list.js";
import { copyBibtexButton, exportLine } from "./references.js";
import { button, byId, copyText, counted, element, link } from "./dom.js";
import { inContextLink } from "./reading_view.js";
import { currentParams, setSort } from "./router.js";

/** @typedef {import("./protocol.js").Hit} Hit */
/** @typedef {import("./protocol.js").SearchReply} SearchReply */
/** @typedef {Omit<Hit, "doc_id" | "score" | "ranks" | "snippet">} DrawnHit what a passage on screen shows */
/** @typedef {{hits: DrawnHit[], semantic: boolean, embeds: boolean, weak: boolean, suggestion: string | null, k: number, missing?: import("./protocol.js").MissingWork[], mode?: import("./protocol.js").Mode}} DrawnReply */

export const MORE_K = 20; // "More results" asks for this many more passages, up to MAX_K
export const MAX_K = 200;

/** The part of a reply the list draws (and history keeps), with the mode it was searched in.
 * @param {SearchReply} reply @param {number} k @param {import("./protocol.js").Mode} [mode] */
export function drawnReply(reply, k, mode = "hybrid") {
  const hits = reply.hits.map(({ doc_id, score, ranks, snippet, ...drawn }) => drawn);
  return { hits, semantic: reply.semantic, embeds: reply.embeds, weak: reply.weak, suggestion: reply.suggestion, k, missing: reply.missing, mode };
}

/** The retrievers that ran, as the summary names them: semantic mode runs the vectors alone.
 * @param {DrawnReply} reply */
export function retrieversLabel(reply) {
  if (reply.mode === "dense") return "semantic";
  return reply.semantic ? "keyword + semantic" : "keyword";
}

const VIEW_KEY = "readingroom-view";
const COMPACT = "compact";

let chosenView = ""; // the choice on this page, for browsers whose storage is off

/** Whether the reader chose the compact view. */
function compactView() {
  try {
    return (localStorage.getItem(VIEW_KEY) ?? chosenView) === COMPACT;
  } catch {
    return chosenView === COMPACT;
  }
}

/** @param {string} value "compact", or "" for the full view */
function rememberView(value) {
  chosenView = value;
  try {
    if (value) localStorage.setItem(VIEW_KEY, value);
    else localStorage.removeItem(VIEW_KEY);
  } catch {
    // storage is off: the choice holds on this page only
  }
}

/** @param {DrawnHit[]} hits @returns {DrawnHit[][]} */
function groupByPaper(hits) {
  /** @type {Map<string, DrawnHit[]>} */
  const groups = new Map();
  for (const hit of hits) {
    let group = groups.get(hit.arxiv_id);
    if (!group) groups.set(hit.arxiv_id, (group = []));
    group.push(hit);
  }
  return [...groups.values()];
}

/** How many papers of the list cite each paper (the build's citation graph, in the page's config). */
function listCitations() {
  const source = document.getElementById("app-config");
  return /** @type {{[id: string]: number}} */ ((source && JSON.parse(source.textContent).cited) || {});
}

// Papers by relevance (as ranked), by date (newest first) or by how often the list cites them, keeping
// the ranked order of passages inside each paper and of equal keys.
/** @type {{[sort: string]: (hit: DrawnHit, counts: {[id: string]: number}) => number}} */
const SORTS = {
  date: (/** @type {DrawnHit} */ hit) => hit.year || 0,
  cited: (/** @type {DrawnHit} */ hit, /** @type {{[id: string]: number}} */ counts) => counts[hit.arxiv_id] || 0,
};

/** @param {DrawnHit[][]} groups */
function sortedGroups(groups) {
  const key = SORTS[currentParams().get("sort") ?? ""];
  if (!key) return groups;
  const counts = listCitations();
  return [...groups].sort((a, b) => key(b[0], counts) - key(a[0], counts));
}

/** @param {string} base @param {DrawnHit[][]} groups a link to the corpus map with these papers lit */
function mapLink(base, groups) {
  const ids = groups.map((hits) => hits[0].arxiv_id).join(",");
  return link(`${base}corpus/?on=${encodeURIComponent(ids)}#map`, "See these papers on the map", "map-link");
}

/** @param {Array<[string, boolean]>} runs */
function drawSnippet(runs) {
  const paragraph = element("p", "snippet");
  for (const [text, marked] of runs) paragraph.append(marked ? element("mark", null, text) : text);
  return paragraph;
}

/** @param {DrawnHit} hit @param {string} references the references file */
function drawHit(hit, references) {
  const item = element("li", "hit");
  item.tabIndex = -1;
  item.dataset.arxivId = hit.arxiv_id;
  item.dataset.page = String(hit.page_start);
  item.dataset.chunkId = hit.chunk_id;
  const where = element("p", "where");
  const pdf = link(pdfUrl(hit, hit.page_start), pagesLabel(hit), "pdf-link");
  where.append(pdf);
  if (hit.section) where.append(" · ", element("span", "section", hit.section));
  const copy = button("Copy citation", () => copyText(fullCitation(hit), copy), "copy");
  copy.setAttribute("aria-label", `Copy citation ${pageCitation(hit)} with title`);
  const actions = element("p", "actions");
  const abstract = link(absUrl(hit), "arXiv abstract");
  const context = inContextLink({ arxiv_id: hit.arxiv_id, page: hit.page_start, chunk_id: hit.chunk_id });
  actions.append(abstract, " · ", link(pdf.href, `PDF ${pagesLabel(hit)}`), " · ", context, " · ", copy, " ", copyBibtexButton(references, hit.arxiv_id));
  item.append(where, drawSnippet(hit.segments), actions);
  return item;
}

/** @param {string} base @param {string} references the references file @param {DrawnHit[]} hits */
function drawGroup(base, references, hits) {
  const first = hits[0];
  const group = element("article", "paper-group");
  group.dataset.arxivId = first.arxiv_id;
  const heading = element("h2");
  heading.append(link(paperPageUrl(base, first.arxiv_id), first.title));
  heading.title = first.title; // whole, where the compact view cuts it
  const byline = [authorsLabel(first.authors), first.year, `arXiv:${versionedId(first)}`].filter(Boolean).join(" · ");
  const list = element("ol", "hits");
  list.append(...hits.map((hit) => drawHit(hit, references)));
  const meta = element("p", "meta", byline);
  meta.append(" ", listToggle(first.arxiv_id, first.title));
  group.append(heading, meta, list);
  return group;
}

/** @param {DrawnReply} reply @param {number} papers */
function summaryOf(reply, papers) {
  const how = retrieversLabel(reply);
  if (!reply.hits.length) return "No passages match. Try other words, or remove filters.";
  if (reply.weak) {
    return `Nothing matches these words well. The ${reply.hits.length} passages below are only the nearest in meaning (${how} search).`;
  }
  return `${counted(reply.hits.length, "passage")} from ${counted(papers, "paper")} (${how} search)`;
}

export class ResultsView {
  /**
   * @param {object} options
   * @param {HTMLElement} options.results the list's container
   * @param {string} options.base the site's base URL, for its paper pages
   * @param {string} options.references the references file (every paper's BibTeX and CSL-JSON)
   * @param {(k: number) => Promise<void>} options.more search again for k passages
   * @param {(suggestion: string) => string} options.suggestionUrl
   * @param {(suggestion: string) => void} options.followSuggestion
   */
  constructor({ results, base, references, more, suggestionUrl, followSuggestion }) {
    this.results = results;
    this.base = base;
    this.references = references;
    this.more = more;
    this.suggestionUrl = suggestionUrl;
    this.followSuggestion = followSuggestion;
    /** @type {DrawnReply | null} the results on screen */
    this.shown = null;
    // The result count is announced: a live region that exists before its first update (screen readers
    // ignore live regions inserted together with their text).
    this.announcer = element("p", "visually-hidden");
    this.announcer.id = "result-count";
    this.announcer.setAttribute("aria-live", "polite");
    results.before(this.announcer);
  }

  /** @param {DrawnReply} reply */
  draw(reply) {
    this.shown = reply;
    const groups = groupByPaper(reply.hits);
    const summary = summaryOf(reply, groups.length);
    this.announcer.textContent = summary;
    /** @type {HTMLElement[]} */
    const drawn = [element("p", "message", summary)];
    if (reply.suggestion) drawn.push(this.drawSuggestion(reply.suggestion));
    if (reply.hits.length) {
      const choices = element("p", "sort");
      if (groups.length > 1) choices.append(this.drawSortChoice(), " ");
      choices.append(this.drawViewChoice());
      const ids = groups.map((hits) => hits[0].arxiv_id);
      const what = ids.length === 1 ? "this paper" : `these ${ids.length} papers`;
      choices.append(" ", exportLine({ url: this.references, what, name: "results", ids: () => ids }));
      drawn.push(choices);
    }
    if (groups.length > 1) drawn.push(mapLink(this.base, groups));
    this.results.classList.toggle("compact", compactView());
    drawn.push(...sortedGroups(groups).map((hits) => drawGroup(this.base, this.references, hits)));
    if (reply.hits.length >= reply.k && reply.k < MAX_K) drawn.push(this.drawMore(reply.k));
    this.results.replaceChildren(...drawn);
  }

  /** @param {string} [message] a line in place of results, or nothing */
  clear(message, className = "message") {
    this.shown = null;
    this.results.replaceChildren(...(message ? [element("p", className, message)] : []));
  }

  drawSortChoice() {
    const label = element("label", null, "Sort papers by ");
    const select = element("select");
    select.id = "sort";
    const choices = [["", "relevance"], ["date", "date, newest first"], ["cited", "most cited in this list"]];
    for (const [value, text] of choices) {
      const option = element("option", null, text);
      option.value = value;
      select.append(option);
    }
    const sort = currentParams().get("sort") ?? "";
    select.value = sort in SORTS ? sort : "";
    select.addEventListener("change", () => {
      setSort(select.value);
      if (this.shown) this.draw(this.shown); // drawn with these results, gone with them
      byId("sort").focus();
    });
    label.append(select);
    return label;
  }

  // The compact view (one line per passage) fits a screenful of results; the choice is the reader's,
  // kept in this browser.
  drawViewChoice() {
    const label = element("label", null, "Show ");
    const select = element("select");
    select.id = "view";
    for (const [value, text] of [["", "passages in full"], [COMPACT, "one line per passage"]]) {
      const option = element("option", null, text);
      option.value = value;
      select.append(option);
    }
    select.value = compactView() ? COMPACT : "";
    select.addEventListener("change", () => {
      rememberView(select.value);
      if (this.shown) this.draw(this.shown);
      byId("view").focus();
    });
    label.append(select);
    return label;
  }

  /** @param {number} k */
  drawMore(k) {
    return button("More results", async () => {
      const count = this.hitElements().length;
      await this.more(Math.min(k + MORE_K, MAX_K));
      const next = this.hitElements()[count];
      if (next) next.focus(); // the reader goes on where the new passages begin
    }, "more");
  }

  // "Did you mean": the corpus's own spelling of words it never uses, one click (or Enter) away.
  /** @param {string} suggestion */
  drawSuggestion(suggestion) {
    const line = element("p", "suggestion", "Did you mean ");
    const anchor = link(this.suggestionUrl(suggestion), suggestion);
    anchor.addEventListener("click", (event) => {
      event.preventDefault();
      this.followSuggestion(suggestion);
    });
    line.append(anchor, "?");
    return line;
  }

  /** @returns {HTMLElement[]} */
  hitElements() {
    return [...this.results.querySelectorAll(".hit")].map((node) => /** @type {HTMLElement} */ (node));
  }

  /**
   * Arrow keys move through the passages (past the first: back to `input`), Enter opens a passage's PDF
   * page, Escape returns to `input`.
   * @param {HTMLInputElement} input
   */
  bindKeys(input) {
    input.addEventListener("keydown", (event) => {
      if (event.key === "ArrowDown" && this.hitElements().length) {
        event.preventDefault();
        this.hitElements()[0].focus();
      }
    });
    this.results.addEventListener("keydown", (event) => {
      const hits = this.hitElements();
      const target = /** @type {HTMLElement} */ (event.target);
      const index = hits.indexOf(target);
      if (index < 0) return;
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const next = index + (event.key === "ArrowDown" ? 1 : -1);
        if (next < 0) input.focus();
        else hits[Math.min(next, hits.length - 1)].focus();
      } else if (event.key === "Enter") {
        event.preventDefault();
        /** @type {HTMLElement} */ (target.querySelector(".pdf-link")).click();
      } else if (event.key === "Escape") {
        input.focus();
      }
    });
  }
}
