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
