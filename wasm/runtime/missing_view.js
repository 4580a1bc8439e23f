// "Not on this list": when a query names a work the list's papers cite but the list does not hold
// ("Chinchilla"), a note above the results says so, with the papers of the list that cite it (each with
// the page that does) and its arXiv id where an entry printed one. The core decides which works a query
// names (readers/missing.py); this only draws them, as text nodes.

import { absUrl, paperPageUrl } from "./citation.js";
import { element, link } from "./dom.js";

/** @typedef {import("./protocol.js").MissingWork} MissingWork */

const SHOWN_CITING = 5; // the rest are counted

export class MissingNote {
  /** @param {HTMLElement} results the note goes just before them @param {string} base the site's base URL */
  constructor(results, base) {
    this.base = base;
    this.box = element("section", "missing-note");
    this.box.id = "missing-note";
    this.box.setAttribute("aria-label", "Not on this list");
    this.box.hidden = true;
    results.before(this.box);
  }

  /** @param {MissingWork[] | undefined} works */
  draw(works) {
    const shown = works ?? [];
    this.box.replaceChildren(...shown.map((work) => this.drawWork(work)));
    this.box.hidden = !shown.length;
  }

  /** @param {MissingWork} work */
  drawWork(work) {
    const part = element("div", "missing-work");
    part.dataset.arxivId = work.arxiv_id ?? "";
    const named = work.names.length ? `${work.names[0]} (“${work.title}”)` : `“${work.title}”`;
    const head = element("p", "missing-head");
    head.append(element("strong", null, "Not on this list: "), `${named} is cited by ${work.cited_by.length} ${work.cited_by.length === 1 ? "paper" : "papers"} of the list but is not one of them.`);
    if (work.arxiv_id) head.append(" ", link(absUrl({ arxiv_id: work.arxiv_id }), `arXiv:${work.arxiv_id}`));
    const citing = element("ul", "missing-citing");
    for (const paper of work.cited_by.slice(0, SHOWN_CITING)) {
      const item = element("li");
      item.append(link(paperPageUrl(this.base, paper.arxiv_id), paper.title), paper.page ? ` (cites it on p. ${paper.page})` : "");
      citing.append(item);
    }
    const more = work.cited_by.length - SHOWN_CITING;
    if (more > 0) citing.append(element("li", null, `and ${more} more`));
    part.append(head, element("p", "missing-intro", "Cited by:"), citing);
    return part;
  }
}
