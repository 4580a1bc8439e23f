// The map of the list on the corpus page: one SVG point per paper, placed at build time
// (builder/paper_map.py) by what the paper is about. Points are links (click or Enter opens the paper);
// one of them is in the tab order and the arrow keys move to the nearest point that way; hover or focus
// names the paper and, with citations on, draws that paper's citations alone, as arrows from the citing
// paper to the cited one (all of them at once were hundreds of crossing lines). Regions carry the
// build's labels (builder/map_labels.py). Titles are taken from the corpus table as text, never as markup.

const SVG = "http://www.w3.org/2000/svg";
const GRID = 1000; // builder/paper_map.py GRID
const PAD = 24;
const RADIUS = 13;

/**
 * The build's map (builder/paper_map.py MapData.to_json): flat [x, y, …] and [citing, cited, …] lists,
 * and the labelled regions as [x, y, label].
 * @typedef {{ids: string[], xy: number[], category: number[], tag: number[], categories: string[],
 *   tags: string[], edges: number[], clusters?: Array<[number, number, string]>}} MapData
 */

/** @template {keyof SVGElementTagNameMap} T @param {T} tag @returns {SVGElementTagNameMap[T]} */
function svg(tag, attributes = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}

/** The nearest point from `from` whose direction lies within 45° of (dx, dy).
 * @param {number[]} xy @param {number} from @param {number} dx @param {number} dy */
function nearestToward(xy, from, dx, dy) {
  let best = -1;
  let bestDistance = Infinity;
  for (let i = 0; i < xy.length / 2; i += 1) {
    const x = xy[2 * i] - xy[2 * from];
    const y = xy[2 * i + 1] - xy[2 * from + 1];
    const along = x * dx + y * dy;
    if (i === from || along <= 0 || along < Math.abs(x * dy - y * dx)) continue;
    const distance = x * x + y * y;
    if (distance < bestDistance) [best, bestDistance] = [i, distance];
  }
  return best;
}

/** @type {{[key: string]: [number, number]}} */
const ARROWS = { ArrowRight: [1, 0], ArrowLeft: [-1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };

/** The arrowhead citation lines end in (coloured by the line, through context-stroke where supported). */
function arrowHeads() {
  const defs = svg("defs");
  const marker = svg("marker", { id: "map-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" });
  marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", class: "map-arrow" }));
  defs.append(marker);
  return defs;
}

export class PaperMap {
  /**
   * @param {object} options
   * @param {HTMLElement} options.canvas where the SVG goes
   * @param {HTMLElement} options.label the line that names the paper under the pointer or focus
   * @param {HTMLElement} options.legend the colour key
   * @param {MapData} options.data
   * @param {(id: string) => {title: string, href: string}} options.paper a paper's title and page
   */
  constructor({ canvas, label, legend, data, paper }) {
    this.label = label;
    this.legend = legend;
    this.data = data;
    const size = GRID + 2 * PAD;
    this.root = svg("svg", { viewBox: `${-PAD} ${-PAD} ${size} ${size}`, role: "group", class: "map" });
    this.root.setAttribute("aria-label", `Map of ${data.ids.length} papers; arrow keys move between them`);
    this.edges = svg("g", { class: "map-edges", "aria-hidden": "true" });
    this.citations = false; // whether the focused paper's citations are drawn
    /** @type {number | undefined} the paper last hovered or focused */
    this.focused = undefined;
    this.titles = data.ids.map((id) => paper(id).title);
    this.points = data.ids.map((id, index) => this.drawPoint(index, paper(id)));
    this.root.append(arrowHeads(), this.edges, ...this.points, this.drawRegions());
    this.points[0]?.setAttribute("tabindex", "0");
    this.root.addEventListener("keydown", (event) => this.move(event));
    canvas.append(this.root);
  }

  /** @param {number} index @param {{title: string, href: string}} paper */
  drawPoint(index, paper) {
    const point = svg("a", { href: paper.href, tabindex: "-1", class: "map-point" });
    point.setAttribute("aria-label", paper.title);
    const [x, y] = [this.data.xy[2 * index], this.data.xy[2 * index + 1]];
    const circle = svg("circle", { cx: x, cy: y, r: RADIUS });
    const title = svg("title");
    title.textContent = paper.title;
    circle.append(title);
    point.append(circle);
    const name = () => this.focusOn(index);
    point.addEventListener("focus", name);
    point.addEventListener("mouseenter", name);
    return point;
  }

  /** The regions' labels, above the points but never in the way of the pointer. */
  drawRegions() {
    const regions = svg("g", { class: "map-regions", "aria-hidden": "true" });
    for (const [x, y, text] of this.data.clusters ?? []) {
      const label = svg("text", { x, y, "text-anchor": "middle", "dominant-baseline": "middle" });
      label.textContent = text;
      regions.append(label);
    }
    return regions;
  }

  /** Name paper `index` and, with citations on, draw its citations alone. @param {number} index */
  focusOn(index) {
    this.focused = index;
    const { edges } = this.data;
    let [cites, citedBy] = [0, 0];
    for (let i = 0; i < edges.length; i += 2) {
      if (edges[i] === index) cites += 1;
      if (edges[i + 1] === index) citedBy += 1;
    }
    const counts = `cites ${cites} ${cites === 1 ? "paper" : "papers"} of the list, cited by ${citedBy}`;
    this.label.textContent = this.citations ? `${this.titles[index]}: ${counts}` : this.titles[index];
    this.drawCitations();
  }

  /** The focused paper's citations as arrows, citing → cited (none while citations are off). */
  drawCitations() {
    const index = this.focused;
    this.edges.replaceChildren();
    if (!this.citations || index === undefined) return;
    const { xy, edges } = this.data;
    for (let i = 0; i < edges.length; i += 2) {
      const [from, to] = [edges[i], edges[i + 1]];
      if (from !== index && to !== index) continue;
      const [x1, y1, x2, y2] = [xy[2 * from], xy[2 * from + 1], xy[2 * to], xy[2 * to + 1]];
      const length = Math.hypot(x2 - x1, y2 - y1) || 1;
      const back = (RADIUS + 4) / length; // the arrow's tip stops at the cited point's edge
      const line = svg("line", { x1, y1, x2: x2 - (x2 - x1) * back, y2: y2 - (y2 - y1) * back, "marker-end": "url(#map-arrow)" });
      line.classList.add(from === index ? "cites" : "cited-by");
      this.edges.append(line);
    }
  }

  /** Colour the points by "category" or "tag", and write the key. @param {"category" | "tag"} kind */
  colourBy(kind) {
    const groups = kind === "tag" ? this.data.tag : this.data.category;
    const names = kind === "tag" ? this.data.tags : this.data.categories;
    this.points.forEach((point, index) => point.setAttribute("data-group", String(groups[index])));
    this.legend.replaceChildren(
      ...names.map((name, group) => {
        const item = document.createElement("li");
        item.dataset.group = String(group);
        item.textContent = name;
        return item;
      }),
    );
  }

  /** Draw the focused paper's citations from now on, or none. @param {boolean} shown */
  showEdges(shown) {
    this.citations = shown;
    if (this.focused !== undefined) this.focusOn(this.focused);
  }

  /** Dim the papers `shown` leaves out (the table's filters). @param {(id: string) => boolean} shown */
  dim(shown) {
    this.points.forEach((point, index) => point.classList.toggle("dimmed", !shown(this.data.ids[index])));
  }

  /** Light up these papers (search results) and say how many are on the map. @param {Set<string>} ids */
  light(ids) {
    let count = 0;
    this.points.forEach((point, index) => {
      const lit = ids.has(this.data.ids[index]);
      point.classList.toggle("lit", lit);
      if (lit) count += 1;
    });
    this.root.classList.toggle("lighting", ids.size > 0);
    return count;
  }

  /** @param {KeyboardEvent} event */
  move(event) {
    const point = event.target instanceof Element ? event.target.closest("a") : null; // a point's <a>, or none
    const from = point ? /** @type {Element[]} */ (this.points).indexOf(point) : -1;
    const arrow = ARROWS[event.key];
    if (from < 0 || !arrow) return;
    event.preventDefault();
    const to = nearestToward(this.data.xy, from, arrow[0], arrow[1]);
    if (to < 0) return;
    this.points[from].setAttribute("tabindex", "-1");
    this.points[to].setAttribute("tabindex", "0");
    this.points[to].focus();
  }
}
