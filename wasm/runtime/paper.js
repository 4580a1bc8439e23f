// A paper's page: "Copy citation", its BibTeX entry as the build rendered it (the same entry results, Ask
// and the exports give), and "Add to my list".

import { paperCitation, versionedId } from "./citation.js";
import { button, byId, copyText } from "./dom.js";
import { listToggle } from "./my_list.js";

/** @type {import("./citation.js").Paper & {reference: import("./references.js").Reference}} */
const paper = JSON.parse(byId("paper-data").textContent);
const actions = byId("cite-actions");
const copy = button("Copy citation", () => copyText(paperCitation(paper), copy), "copy");
copy.setAttribute("aria-label", `Copy a citation of arXiv:${versionedId(paper)}`);
const copyBibtex = button("BibTeX", () => copyText(paper.reference.bibtex, copyBibtex), "copy-bibtex");
copyBibtex.setAttribute("aria-label", `Copy a BibTeX entry for arXiv:${versionedId(paper)}`);
actions.append(copy, " ", copyBibtex, " ", listToggle(paper.arxiv_id, paper.title));
actions.hidden = false;
