// A paper's addresses and how to cite it in words, for the results, the Ask sources and the exports alike:
// every arXiv link names the version the site indexed, so a page number points where the passage is.
// BibTeX and CSL-JSON are not written here: the build renders them (builder/bibliography.py)
// and references.js hands them out.

export const ARXIV = "https://arxiv.org";

/** @typedef {{page_start: number, page_end: number}} PageRange */
/**
 * What a citation needs of a paper: a hit or an Ask source.
 * @typedef {{arxiv_id: string, title: string, authors?: string[], year?: number | null, categories?: string[], version?: string}} Paper
 */

/** "2305.18290v2": the id with the version the site holds ("" where it does not say).
 * @param {{arxiv_id: string, version?: string}} paper */
export function versionedId(paper) {
  return `${paper.arxiv_id}${paper.version || ""}`;
}

/** @param {{arxiv_id: string, version?: string}} paper */
export function absUrl(paper) {
  return `${ARXIV}/abs/${versionedId(paper)}`;
}

/** @param {{arxiv_id: string, version?: string}} paper @param {number} page */
export function pdfUrl(paper, page) {
  return `${ARXIV}/pdf/${versionedId(paper)}#page=${page}`;
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
  return `${pageCitation(hit)} ${byline}. ${hit.title}. arXiv:${versionedId(hit)}, ${pagesLabel(hit)}.`;
}

/** The paper as a reference: "Hu, Shen, Wallis et al. (2021). LoRA: …. arXiv:2106.09685v2." @param {Paper} paper */
export function paperCitation(paper) {
  const who = authorsLabel(paper.authors || []);
  const byline = [who, paper.year ? `(${paper.year})` : ""].filter(Boolean).join(" ");
  return `${byline ? byline + ". " : ""}${paper.title}. arXiv:${versionedId(paper)}.`;
}
