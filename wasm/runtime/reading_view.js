// The reading view: a passage in context. From a result or an Ask citation, one page of the paper's text
// (the page texts the site ships, read by range by the core: readingroom_core/in_context.py) with the
// passage or quote marked, the neighbouring pages a step away, and the indexed version's PDF at that
// page. Its address (router.js readingUrl) can be shared, and Back/Forward step through pages read.
// Paper text is untrusted: it reaches the DOM only through textContent.

import { authorsLabel, paperPageUrl, pdfUrl } from "./citation.js";
import { byId, element, link } from "./dom.js";
import { readingPlace, readingUrl } from "./router.js";

/** @typedef {import("./router.js").ReadingPlace} ReadingPlace */
/** @typedef {import("./protocol.js").PageReply} PageReply */
/** @typedef {(place: ReadingPlace) => Promise<PageReply>} PageRequest */

const READING = "reading"; // the body's class while the view is open: style.css hides the rest of main

/** @param {Array<[string, boolean]>} runs */
function pageText(runs) {
  const text = element("div", "page-text");
  for (const [part, marked] of runs) text.append(marked ? element("mark", null, part) : part);
  return text;
}

export class ReadingView {
  /**
   * @param {object} options
   * @param {string} options.base the site's base URL
   * @param {PageRequest} options.request the page's text from the search worker
   */
  constructor({ base, request }) {
    this.base = base;
    this.request = request;
    this.box = byId("reader");
    this.latest = 0;
    /** @type {ReadingPlace | null} */
    this.place = null;
  }

  /** Open a place as a history entry of its own (a click on an in-context link). @param {string} url */
  go(url) {
    history.pushState({ reading: true, fromSite: true }, "", url);
    this.showCurrent();
  }

  /** Show the place the URL names, or close the view when it names none. */
  showCurrent() {
    const place = readingPlace();
    if (!place) return this.close();
    this.open(place);
  }

  close() {
    if (!this.place) return;
    this.place = null;
    this.latest++;
    document.body.classList.remove(READING);
    this.box.hidden = true;
    this.box.replaceChildren();
  }

  /** @param {ReadingPlace} place */
  async open(place) {
    this.place = place;
    const mine = ++this.latest;
    document.body.classList.add(READING);
    this.box.hidden = false;
    this.box.setAttribute("aria-busy", "true");
    this.box.replaceChildren(element("p", "message waiting", `Reading p.${place.page} of arXiv:${place.arxiv_id}…`));
    window.scrollTo(0, 0);
    try {
      const reply = await this.request(place);
      if (mine === this.latest) this.draw(place, reply);
    } catch (error) {
      if (mine === this.latest) {
        this.box.replaceChildren(this.backButton(), element("p", "message error", /** @type {Error} */ (error).message));
      }
    } finally {
      if (mine === this.latest) this.box.setAttribute("aria-busy", "false");
    }
  }

  /** @param {ReadingPlace} place @param {PageReply} reply */
  draw(place, reply) {
    const heading = element("h2");
    heading.append(link(paperPageUrl(this.base, reply.arxiv_id), reply.title));
    heading.tabIndex = -1;
    const byline = [authorsLabel(reply.authors), reply.year, `arXiv:${reply.arxiv_id}${reply.version}`];
    const nav = element("nav", "reader-nav");
    nav.setAttribute("aria-label", "Pages");
    const step = (/** @type {number | null} */ page, /** @type {string} */ text, /** @type {string} */ rel) => {
      if (page === null) return element("span", "reader-step disabled", text);
      const anchor = link(readingUrl({ ...place, page }), text, `reader-step in-context ${rel}`);
      anchor.rel = rel;
      return anchor;
    };
    const pdf = link(pdfUrl(reply, reply.page), `PDF${reply.version ? " " + reply.version : ""} at p.${reply.page}`, "reader-pdf");
    pdf.rel = "noopener noreferrer";
    const where = element("span", "reader-page", `p.${reply.page} (pages ${reply.first}–${reply.last})`);
    const prev = step(reply.prev, reply.prev === null ? "first page" : `← p.${reply.prev}`, "prev");
    nav.append(prev, " ", where, " ", step(reply.next, reply.next === null ? "last page" : `p.${reply.next} →`, "next"), " ", pdf);
    const drawn = [this.backButton(), heading, element("p", "meta", byline.filter(Boolean).join(" · ")), nav];
    if (place.chunk_id || place.quote) {
      const note = reply.marked
        ? `The marked text is the ${place.quote ? "quote" : "passage"} you came from.`
        : `The ${place.quote ? "quote" : "passage"} you came from is not on this page.`;
      drawn.push(element("p", "reader-note", note));
    }
    drawn.push(pageText(reply.segments));
    this.box.replaceChildren(...drawn);
    const mark = this.box.querySelector("mark");
    heading.focus({ preventScroll: true });
    if (mark) mark.scrollIntoView({ block: "center" });
  }

  backButton() {
    const state = /** @type {{fromSite?: boolean} | null} */ (history.state);
    if (!state?.fromSite) return link(this.base, "← Search", "reader-back");
    const back = element("button", "reader-back", "← Back");
    back.type = "button";
    back.addEventListener("click", () => history.back());
    return back;
  }

  /** In-context links anywhere on the page (results, Ask's citations, the view's own steps) open here;
   * a modified click (a new tab) keeps the browser's own. Arrow keys step pages while the view is open. */
  bind() {
    document.addEventListener("click", (event) => {
      const target = /** @type {HTMLElement} */ (event.target);
      const anchor = /** @type {HTMLAnchorElement | null} */ (target.closest?.("a.in-context"));
      if (!anchor || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
      event.preventDefault();
      const fromSite = /** @type {{fromSite?: boolean} | null} */ (history.state)?.fromSite;
      if (this.place && anchor.classList.contains("reader-step")) {
        // a step to a neighbouring page keeps the way back to where the reader came from
        history.pushState({ reading: true, fromSite: Boolean(fromSite) }, "", anchor.href);
        this.showCurrent();
      } else {
        this.go(anchor.href);
      }
    });
    document.addEventListener("keydown", (event) => {
      if (!this.place || event.ctrlKey || event.metaKey || event.altKey) return;
      const target = /** @type {HTMLElement} */ (event.target);
      if (target.closest("input, textarea, select, [contenteditable]")) return;
      const rel = { ArrowLeft: "prev", ArrowRight: "next" }[event.key];
      const step = rel && /** @type {HTMLAnchorElement | null} */ (this.box.querySelector(`a.reader-step.${rel}`));
      if (step) {
        event.preventDefault();
        step.click();
      }
    });
    window.addEventListener("popstate", () => this.showCurrent());
    this.showCurrent();
  }
}

/** The link from a result or a citation to its place in context. @param {ReadingPlace} place @param {string} text */
export function inContextLink(place, text = "Read in context") {
  return link(readingUrl(place), text, "in-context");
}
