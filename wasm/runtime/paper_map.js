// The map of the list on the corpus page: one SVG point per paper, placed at build time
// (builder/paper_map.py) by what the paper is about. Points are links (click or Enter opens the paper);
// one of them is in the tab order and the arrow keys move to the nearest point that way; hover or focus
// names the paper. Titles are taken from the corpus table as text, never as markup.

const SVG = "http://www.w3.org/2000/svg";
const GRID = 1000; // builder/paper_map.py GRID
const PAD = 24;
const RADIUS = 13;

/**
 * The build's map (builder/paper_map.py MapData.to_json): flat [x, y, …] and [from, to, …] lists.
 * @typedef {{ids: string[], xy: number[], category: number[], tag: number[], categories: string[],
 *   tags: string[], edges: number[]}} MapData
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
    this.edges.style.display = "none";
    this.points = data.ids.map((id, index) => this.drawPoint(index, paper(id)));
    this.root.append(this.edges, ...this.points);
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
    const name = () => (this.label.textContent = paper.title);
    point.addEventListener("focus", name);
    point.addEventListener("mouseenter", name);
    return point;
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

  /** Draw or hide the citations between papers (lines from citing to cited). @param {boolean} shown */
  showEdges(shown) {
    if (shown && !this.edges.childElementCount) {
      const { xy, edges } = this.data;
      for (let i = 0; i < edges.length; i += 2) {
        const [a, b] = [edges[i], edges[i + 1]];
        this.edges.append(svg("line", { x1: xy[2 * a], y1: xy[2 * a + 1], x2: xy[2 * b], y2: xy[2 * b + 1] }));
      }
    }
    this.edges.style.display = shown ? "" : "none";
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
