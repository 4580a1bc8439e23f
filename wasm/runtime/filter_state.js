// The search page's menu filters made visible: which are set (a shared link sets them silently, and on a
// phone they fold away behind "Filters and syntax"), a clear-filters action, a hint when the year range
// runs backwards, and "No passages match" saying which filters were set. And the page's skip link leads
// to the first result once there are results, a Tab and Enter away instead of a score of Tabs.

import { button, element } from "./dom.js";

/** @typedef {{[param: string]: HTMLSelectElement}} Fields the search form's selects, by URL parameter */

const LABELS = { year_min: "from year", year_max: "to year", cat: "category", tag: "tag" };

/** The menu filters set in `params`, as "label value" phrases. @param {URLSearchParams} params */
export function setFilters(params) {
  return Object.entries(LABELS)
    .filter(([param]) => params.get(param))
    .map(([param, label]) => `${label} ${params.get(param)}`);
}

/** Whether `params` asks for a year range that ends before it starts. @param {URLSearchParams} params */
export function invertedYears(params) {
  const [from, to] = [params.get("year_min"), params.get("year_max")];
  return Boolean(from && to && Number(from) > Number(to));
}

export class FilterState {
  /**
   * @param {{fields: Fields, results: HTMLElement, toggle: HTMLButtonElement, skip: HTMLAnchorElement | null,
   *          changed: () => void}} options `changed`: search again after the filters were changed here
   */
  constructor({ fields, results, toggle, skip, changed }) {
    this.fields = fields;
    this.results = results;
    this.toggle = toggle;
    this.toggleLabel = toggle.textContent;
    this.skip = skip;
    this.skipLabel = skip?.textContent ?? "";
    this.changed = changed;
    this.line = element("p", "filters-set");
    this.line.id = "filters-set";
    this.line.setAttribute("role", "status"); // announced when a link or a later search finds them set
    this.line.hidden = true;
    results.before(this.line);
    skip?.addEventListener("click", (event) => {
      const first = /** @type {HTMLElement | null} */ (results.querySelector(".hit"));
      if (!first) return; // no results: the link goes to the content, as on every page
      event.preventDefault();
      first.scrollIntoView({ block: "center" });
      first.focus();
    });
  }

  /** Redraw for the search of `params`; `hits`: how many passages its reply drew (null: none yet).
   * @param {URLSearchParams} params @param {number | null} hits */
  draw(params, hits) {
    const set = setFilters(params);
    this.toggle.textContent = set.length ? `${this.toggleLabel} (${set.length} set)` : this.toggleLabel;
    const parts = [];
    if (invertedYears(params)) {
      parts.push(`The year range runs backwards (from ${params.get("year_min")} to ${params.get("year_max")}), so no paper can match. `);
      parts.push(button("Swap the years", () => this.swapYears(), "swap-years"), " ");
    } else if (set.length && hits === 0) {
      parts.push(`No passages match with these filters set: ${set.join(", ")}. `);
    } else if (set.length) {
      parts.push(`Filters set: ${set.join(", ")}. `);
    }
    if (set.length) parts.push(button("Clear filters", () => this.clear(), "clear-filters"));
    this.line.replaceChildren(...parts);
    this.line.hidden = !parts.length;
    this.line.classList.toggle("warning", invertedYears(params) || (set.length > 0 && hits === 0));
    if (this.skip) {
      const results = hits !== null && hits > 0;
      this.skip.textContent = results ? "Skip to results" : this.skipLabel;
    }
  }

  clear() {
    for (const param of Object.keys(LABELS)) this.fields[param].value = "";
    this.changed();
  }

  swapYears() {
    const { year_min: from, year_max: to } = this.fields;
    [from.value, to.value] = [to.value, from.value];
    this.changed();
  }
}
