// A paper's addresses and how to cite it, for the results, the Ask sources and the exports alike.

export const ARXIV = "https://arxiv.org";

/** @typedef {{page_start: number, page_end: number}} PageRange */
/**
 * What a citation needs of a paper: a hit or an Ask source.
 * @typedef {{arxiv_id: string, title: string, authors?: string[], year?: number | null, categories?: string[], version?: string}} Paper
 */

/** @param {string} arxivId */
export function absUrl(arxivId) {
  return `${ARXIV}/abs/${arxivId}`;
}

/** @param {string} arxivId @param {number} page */
export function pdfUrl(arxivId, page) {
  return `${ARXIV}/pdf/${arxivId}#page=${page}`;
}

/** The site's own page of a paper (builder/site/pages.py paper_dir: an old-style id's "/" becomes "_").
 * @param {string} base @param {string} arxivId */
export function paperPageUrl(base, arxivId) {
  return `${base}papers/${arxivId.replaceAll("/", "_")}/`;
}

/** "p.4" or "pp.4-5". @param {PageRange} range */
export function pagesLabel(range) {
  return range.page_start === range.page_end ? `p.${range.page_start}` : `pp.${range.page_start}-${range.page_end}`;
}

/** @param {string[]} authors */
export function authorsLabel(authors) {
  return authors.length > 3 ? `${authors.slice(0, 3).join(", ")} et al.` : authors.join(", ");
}

/** "[arXiv:1904.08375 p.2]", the form the Ask prompt asks models to cite in. @param {Paper & PageRange} hit */
export function pageCitation(hit) {
  return `[arXiv:${hit.arxiv_id} ${pagesLabel(hit)}]`;
}

/** The page citation, then who wrote what, when, so that a pasted quote stands alone. @param {Paper & PageRange} hit */
export function fullCitation(hit) {
  const who = authorsLabel(hit.authors || []);
  const byline = [who, hit.year ? `(${hit.year})` : ""].filter(Boolean).join(" ");
  return `${pageCitation(hit)} ${byline}. ${hit.title}. arXiv:${hit.arxiv_id}, ${pagesLabel(hit)}.`;
}

/** The paper as a reference: "Hu, Shen, Wallis et al. (2021). LoRA: …. arXiv:2106.09685v2." @param {Paper} paper */
export function paperCitation(paper) {
  const who = authorsLabel(paper.authors || []);
  const byline = [who, paper.year ? `(${paper.year})` : ""].filter(Boolean).join(" ");
  return `${byline ? byline + ". " : ""}${paper.title}. arXiv:${paper.arxiv_id}${paper.version || ""}.`;
}

/** First author's surname, year and first long title word: "lindqvist2019expanding". @param {Paper} paper */
export function readableKey(paper) {
  const surname = ((paper.authors || [""])[0].trim().split(/\s+/).pop() || "arxiv").toLowerCase();
  const word = (paper.title.toLowerCase().match(/[a-z0-9]{4,}/) || [""])[0];
  return `${surname.normalize("NFKD").replace(/[^a-z0-9]/g, "")}${paper.year || ""}${word}`;
}

/** A field's text with what would break BibTeX or LaTeX taken out or escaped. @param {string} text */
function bibtexValue(text) {
  return String(text).replace(/[{}\\]/g, "").replace(/([%&$#_])/g, "\\$1").replace(/\s+/g, " ").trim();
}

/**
 * One @misc entry for an arXiv paper.
 * @param {Paper} paper
 * @param {{key?: string, note?: string}} [options] key: the citation key (readableKey unless given)
 */
export function bibtex(paper, { key = readableKey(paper), note } = {}) {
  const fields = [
    ["title", `{${bibtexValue(paper.title)}}`],
    ["author", (paper.authors || []).map(bibtexValue).join(" and ")],
    ["year", paper.year],
    ["eprint", paper.arxiv_id],
    ["archivePrefix", "arXiv"],
    ["primaryClass", (paper.categories || [])[0]],
    ["url", absUrl(paper.arxiv_id)],
    ["note", note],
  ].filter(([, value]) => value);
  return `@misc{${key},\n${fields.map(([name, value]) => `  ${name} = {${value}}`).join(",\n")}\n}`;
}
