// The search's state in the URL (?q=&mode=&year_min=&year_max=&cat=&tag=&sort=) and in history: a search
// can be shared, survives a reload, and Back steps through what the visitor actually looked at.

/** @typedef {import("./protocol.js").Filters} Filters */
/** @typedef {import("./results_view.js").DrawnReply} DrawnReply */

/**
 * What a history entry keeps so that Back from a paper finds the reader's place at once, without
 * searching again (keyword-only while the engine loads): the results as drawn and the scroll position.
 * @typedef {{url: string, drawn: DrawnReply, scrollY: number}} SavedView
 */

export class Router {
  /**
   * @param {HTMLInputElement} input the query box
   * @param {{[param: string]: HTMLSelectElement}} fields the form's selects by URL parameter
   */
  constructor(input, fields) {
    this.input = input;
    this.fields = fields;
    // Typing replaces its own history entry as the query grows; a submitted query or a filter change
    // adds one.
    this.typingEntry = false;
    history.scrollRestoration = "manual";
  }

  /** The form's state as URL parameters (hybrid mode, the default, left out). */
  formParams() {
    const params = new URLSearchParams();
    if (this.input.value.trim()) params.set("q", this.input.value.trim());
    for (const [name, field] of Object.entries(this.fields)) {
      if (field.value && !(name === "mode" && field.value === "hybrid")) params.set(name, field.value);
    }
    return params;
  }

  /** @param {URLSearchParams} params */
  applyParams(params) {
    this.input.value = params.get("q") || "";
    for (const [name, field] of Object.entries(this.fields)) {
      const value = params.get(name) || (name === "mode" ? "hybrid" : "");
      field.value = [...field.options].some((option) => option.value === value) ? value : field.options[0].value;
    }
  }

  /** @param {"typing" | "submit" | "filter"} how */
  record(how) {
    const params = this.formParams();
    const url = `${location.pathname}${params.toString() ? "?" + params : ""}`;
    if (url !== currentUrl()) {
      if (how === "typing" && this.typingEntry) history.replaceState(null, "", url);
      else history.pushState(null, "", url);
      this.typingEntry = how === "typing";
    }
    return params;
  }

  /** The next query starts an entry of its own (a submit, a suggestion followed, Back). */
  endTyping() {
    this.typingEntry = false;
  }
}

/** @returns {URLSearchParams} */
export function currentParams() {
  return new URLSearchParams(location.search);
}

export function currentUrl() {
  return `${location.pathname}${location.search}`;
}

/** @param {URLSearchParams} params @returns {Filters} */
export function filtersOf(params) {
  const year = (/** @type {string} */ name) => (params.get(name) ? Number(params.get(name)) : null);
  const [category, tag] = [params.get("cat"), params.get("tag")];
  return {
    year_min: year("year_min"),
    year_max: year("year_max"),
    categories: category ? [category] : [],
    tags: tag ? [tag] : [],
  };
}

/** @param {string} value "" for relevance */
export function setSort(value) {
  const params = currentParams();
  if (value) params.set("sort", value);
  else params.delete("sort");
  history.replaceState(history.state, "", `${location.pathname}?${params}`);
  saveView({ url: currentUrl() });
}

/** @param {Partial<SavedView>} changes */
export function saveView(changes) {
  history.replaceState({ ...(history.state || {}), ...changes }, "");
}

/** The results saved in this history entry, when they belong to this URL's query.
 * @param {unknown} entry history.state @returns {SavedView | null} */
export function savedView(entry) {
  const saved = /** @type {SavedView | null} */ (entry);
  if (!saved || !saved.drawn || saved.url !== currentUrl() || !currentParams().get("q")) return null;
  return saved;
}

// The reading view's address (?read=ID&p=N, with &chunk= for a result's passage or &quote= for an Ask
// citation's), so that a page in context can be shared and Back returns to where it was opened.
/** @typedef {{arxiv_id: string, page: number, chunk_id?: string, quote?: string}} ReadingPlace */

/** "?read=…", relative to the search page (Ask's answers are drawn away from any page, under Node too).
 * @param {ReadingPlace} place */
export function readingQuery({ arxiv_id, page, chunk_id, quote }) {
  const params = new URLSearchParams({ read: arxiv_id, p: String(page) });
  if (chunk_id) params.set("chunk", chunk_id);
  if (quote) params.set("quote", quote);
  return `?${params}`;
}

/** @param {ReadingPlace} place */
export function readingUrl(place) {
  return `${location.pathname}${readingQuery(place)}`;
}

/** The place this URL reads, or null for any other view. @returns {ReadingPlace | null} */
export function readingPlace(params = currentParams()) {
  const arxivId = params.get("read");
  const page = Number(params.get("p") || "1");
  if (!arxivId || !Number.isInteger(page) || page < 1) return null;
  return { arxiv_id: arxivId, page, chunk_id: params.get("chunk") || "", quote: params.get("quote") || "" };
}
