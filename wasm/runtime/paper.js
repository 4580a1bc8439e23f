// A paper's page: "Copy citation" and "BibTeX", written by citation.js as the search results write them.

import { bibtex, paperCitation } from "./citation.js";
import { button, byId, copyText } from "./dom.js";

/** @type {import("./citation.js").Paper} */
const paper = JSON.parse(byId("paper-data").textContent);
const actions = byId("cite-actions");
const copy = button("Copy citation", () => copyText(paperCitation(paper), copy), "copy");
copy.setAttribute("aria-label", `Copy a citation of arXiv:${paper.arxiv_id}${paper.version || ""}`);
const entry = bibtex(paper);
const copyBibtex = button("BibTeX", () => copyText(entry, copyBibtex), "copy-bibtex");
copyBibtex.setAttribute("aria-label", `Copy a BibTeX entry for arXiv:${paper.arxiv_id}`);
actions.append(copy, " ", copyBibtex);
actions.hidden = false;
