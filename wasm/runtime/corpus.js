// The corpus table: filter by text, year, category and tag (also from ?q=&year=&cat=&tag=), sort by column;
// and the map of the list (paper_map.js), dimmed by the same filters, lighting up ?on=id,id (search results).

import { byId } from "./dom.js";
import "./list_exports.js";
import { foldWith, pageFoldTable } from "./fold.js";
import { PaperMap } from "./paper_map.js";

const table = /** @type {HTMLTableElement} */ (document.getElementById("corpus-table"));
const body = table.tBodies[0];
const shown = byId("corpus-shown");
/** @type {{[param: string]: HTMLInputElement | HTMLSelectElement}} */
const controls = {
  q: /** @type {HTMLInputElement} */ (document.getElementById("corpus-text")),
  year: /** @type {HTMLSelectElement} */ (document.getElementById("corpus-year")),
  cat: /** @type {HTMLSelectElement} */ (document.getElementById("corpus-cat")),
  tag: /** @type {HTMLSelectElement} */ (document.getElementById("corpus-tag")),
};

const FOLDS = pageFoldTable("fold-table");

// Words, not exact text: "retrieval augmented" finds "Retrieval-Augmented", in any order; accents are
// folded by the core's rule, so "oguz" finds Oğuz (and "Oğuz" finds it too).
/** @param {string} text */
function words(text) {
  return foldWith(FOLDS, text).replace(/[^\p{L}\p{N}.]+/gu, " ").trim().split(" ").filter(Boolean);
}

/** @param {HTMLTableRowElement} row */
function matches(row) {
  const wanted = words(controls.q.value);
  const { title, authors, arxivId, year, categories, tags } = row.dataset;
  const haystack = ` ${words(`${title} ${authors} ${arxivId}`).join(" ")}`;
  if (wanted.some((word) => !haystack.includes(` ${word}`))) return false;
  if (controls.year.value && year !== controls.year.value) return false;
  // JSON lists, since a tag may hold spaces ("deep learning")
  if (controls.cat.value && !JSON.parse(String(categories)).includes(controls.cat.value)) return false;
  return !controls.tag.value || JSON.parse(String(tags)).includes(controls.tag.value);
}

/** @type {PaperMap | null} */
let map = null;

function applyFilters() {
  let count = 0;
  const visible = new Set();
  for (const row of body.rows) {
    row.hidden = !matches(row);
    if (!row.hidden) {
      count += 1;
      visible.add(row.dataset.arxivId);
    }
  }
  shown.textContent = `${count} shown`;
  map?.dim((id) => visible.has(id));
}

function startMap() {
  const source = document.getElementById("map-data");
  if (!source) return null;
  const rows = new Map([...body.rows].map((row) => [row.dataset.arxivId, row]));
  const drawn = new PaperMap({
    canvas: byId("map-canvas"),
    label: byId("map-label"),
    legend: byId("map-legend"),
    data: JSON.parse(source.textContent),
    paper(id) {
      const anchor = rows.get(id)?.querySelector("a");
      if (!anchor) throw new Error(`the corpus table has no link to ${id}`);
      return { title: anchor.textContent, href: anchor.href };
    },
  });
  const colour = /** @type {HTMLSelectElement} */ (document.getElementById("map-colour"));
  const edges = /** @type {HTMLInputElement} */ (document.getElementById("map-edges"));
  colour.addEventListener("change", () => drawn.colourBy(colour.value === "tag" ? "tag" : "category"));
  edges.addEventListener("change", () => drawn.showEdges(edges.checked));
  drawn.colourBy("category");
  const lit = (new URLSearchParams(location.search).get("on") || "").split(",").filter(Boolean);
  if (lit.length) {
    const count = drawn.light(new Set(lit));
    byId("map-label").textContent = `${count} papers from your search are lit up.`;
  }
  return drawn;
}

// The filters live in the URL too, so a filtered table can be shared and survives a reload.
function recordFilters() {
  const params = new URLSearchParams();
  const lit = new URLSearchParams(location.search).get("on"); // the search results the map lights up
  if (lit) params.set("on", lit);
  for (const [name, control] of Object.entries(controls)) if (control.value.trim()) params.set(name, control.value.trim());
  const query = params.toString();
  history.replaceState(null, "", `${location.pathname}${query ? "?" + query : ""}`);
}

/** @param {HTMLButtonElement} button one of the table head's ("th button") */
function sortBy(button) {
  const header = /** @type {HTMLTableCellElement} */ (button.closest("th"));
  const head = /** @type {HTMLTableSectionElement} */ (table.tHead);
  // A first click sorts text A to Z and numbers largest first (most cited, most pages); the next reverses.
  const sorted = header.getAttribute("aria-sort");
  const descending = sorted === "none" || !sorted ? "numeric" in button.dataset : sorted === "ascending";
  for (const th of head.rows[0].cells) if (th.hasAttribute("aria-sort")) th.setAttribute("aria-sort", "none");
  header.setAttribute("aria-sort", descending ? "descending" : "ascending");
  const key = button.dataset.sort ?? "";
  /** @param {HTMLTableRowElement} row */
  const value = (row) => ("numeric" in button.dataset ? Number(row.dataset[key]) || 0 : row.dataset[key] ?? "");
  const rows = [...body.rows].sort((a, b) => {
    const order = value(a) < value(b) ? -1 : value(a) > value(b) ? 1 : 0;
    return descending ? -order : order;
  });
  body.append(...rows);
}

const params = new URLSearchParams(location.search);
for (const [name, control] of Object.entries(controls)) {
  const wanted = params.get(name);
  if (wanted && (!(control instanceof HTMLSelectElement) || [...control.options].some((o) => o.value === wanted))) {
    control.value = wanted;
  }
  control.addEventListener("input", () => {
    applyFilters();
    recordFilters();
  });
}
byId("corpus-filters").addEventListener("submit", (event) => event.preventDefault());
const sortButtons = /** @type {NodeListOf<HTMLButtonElement>} */ (table.querySelectorAll("th button"));
for (const button of sortButtons) button.addEventListener("click", () => sortBy(button));
map = startMap();
applyFilters();
