// The corpus table: filter by text, year, category and tag (also from ?q=&year=&cat=&tag=), sort by column.

const table = document.getElementById("corpus-table");
const body = table.tBodies[0];
const shown = document.getElementById("corpus-shown");
const controls = {
  q: document.getElementById("corpus-text"),
  year: document.getElementById("corpus-year"),
  cat: document.getElementById("corpus-cat"),
  tag: document.getElementById("corpus-tag"),
};

function matches(row) {
  const text = controls.q.value.trim().toLowerCase();
  const { title, authors, arxivId, year, categories, tags } = row.dataset;
  if (text && !`${title} ${authors} ${arxivId}`.includes(text)) return false;
  if (controls.year.value && year !== controls.year.value) return false;
  // JSON lists, since a tag may hold spaces ("deep learning")
  if (controls.cat.value && !JSON.parse(categories).includes(controls.cat.value)) return false;
  return !controls.tag.value || JSON.parse(tags).includes(controls.tag.value);
}

function applyFilters() {
  let count = 0;
  for (const row of body.rows) {
    row.hidden = !matches(row);
    if (!row.hidden) count += 1;
  }
  shown.textContent = `${count} shown`;
}

function sortBy(button) {
  const header = button.closest("th");
  const descending = header.getAttribute("aria-sort") !== "descending";
  for (const th of table.tHead.rows[0].cells) if (th.hasAttribute("aria-sort")) th.setAttribute("aria-sort", "none");
  header.setAttribute("aria-sort", descending ? "descending" : "ascending");
  const key = button.dataset.sort;
  const value = (row) => ("numeric" in button.dataset ? Number(row.dataset[key]) || 0 : row.dataset[key]);
  const rows = [...body.rows].sort((a, b) => {
    const order = value(a) < value(b) ? -1 : value(a) > value(b) ? 1 : 0;
    return descending ? -order : order;
  });
  body.append(...rows);
}

const params = new URLSearchParams(location.search);
for (const [name, control] of Object.entries(controls)) {
  const wanted = params.get(name);
  if (wanted && (control.tagName !== "SELECT" || [...control.options].some((o) => o.value === wanted))) {
    control.value = wanted;
  }
  control.addEventListener("input", applyFilters);
}
document.getElementById("corpus-filters").addEventListener("submit", (event) => event.preventDefault());
for (const button of table.querySelectorAll("th button")) button.addEventListener("click", () => sortBy(button));
applyFilters();
