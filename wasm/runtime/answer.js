// An answer on screen and on disk: Markdown through markdown-it (no raw HTML, http(s) links only, no
// images), citations drawn from the verifier's findings, and the Markdown and BibTeX exports.
//
// Model output is untrusted. Citations are cut out of the text by the core's own parser (its offsets)
// and replaced by placeholders in a private-use range before markdown-it sees the text; a core rule then
// turns each placeholder into a citation token whose renderer escapes everything it writes. Placeholder
// characters already in the model's text are replaced first, so the model cannot forge one. Verdict
// marks (✓ ✗ ✅ ❌ …) the model writes are replaced too, one character for one so that the verifier's
// offsets still hold (and again once markdown-it has decoded entities): a verdict on the page comes only
// from the verifier.

import { absUrl, pdfUrl } from "./citation.js";
import { bibtexFile } from "./references.js";
import MarkdownIt from "./markdown-it.mjs";
import { readingQuery } from "./router.js";

/** @typedef {import("./protocol.js").Citation} Citation */
/** What a render with citations hands markdown-it's rules: each citation's text as written, and its drawing.
 * @typedef {{raw: string[], drawCitation: (n: number) => string}} CitationEnv */
/** @typedef {import("./protocol.js").AskCitation} AskCitation */
/** @typedef {import("./protocol.js").AskSource} AskSource */
/** @typedef {{arxiv_id: string, version: string, source: AskSource | undefined, pages: Set<number>, verified: number, total: number}} CitedPaper */

const OPEN = "\uE000"; // placeholder: OPEN + index + CLOSE (citation) or UNCITED + index + CLOSE
const UNCITED = "\uE002";
const CLOSE = "\uE001";
const PLACEHOLDER = /([\uE000\uE002])(\d+)\uE001/g;
const SAFE_URL = /^https?:\/\//i;
const FORGEABLE = /[\uE000-\uE002\u2713\u2714\u2705\u2611\u2612\u2717\u2718\u274C\u274E\u2715\u2716\u{1F5F8}]/gu;

/** The model's text with placeholders and verdict marks replaced by U+FFFD, code point for code point.
 * @param {string} text */
function untrusted(text) {
  return String(text).replace(FORGEABLE, "\uFFFD");
}

/** @param {Citation} citation */
export function reasonText(citation) {
  return citation.reason || citation.status || "could not be checked";
}

/** @param {Citation} citation */
function citedPages(citation) {
  if (!citation.page) return "(no page)";
  return citation.page_end && citation.page_end !== citation.page ? `pp.${citation.page}-${citation.page_end}` : `p.${citation.page}`;
}

/** @param {string} text */
function escapeHtml(text) {
  /** @type {{[c: string]: string}} */
  const entities = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
  return String(text).replace(/[&<>"']/g, (c) => entities[c]);
}

/** markdown-it decodes entities (&#10003; &check; &#xE000;) after untrusted() has run: what they decode
 * to is replaced the same way before the pieces join into text, so a mark or a placeholder the model
 * spells as an entity is never drawn either. @param {import("markdown-it").StateCore} state */
function entityMarks(state) {
  /** @param {import("markdown-it").Token[] | null} tokens */
  const clean = (tokens) => {
    for (const token of tokens ?? []) {
      if (token.type === "text_special" && token.info === "entity") token.content = untrusted(token.content);
      const title = token.attrGet("title");
      if (title !== null) token.attrSet("title", untrusted(String(title)));
      clean(token.children);
    }
  };
  for (const token of state.tokens) if (token.type === "inline") clean(token.children);
}

function makeMarkdown() {
  const md = new MarkdownIt({ html: false, linkify: false, typographer: false });
  md.disable(["image"]); // an image would fetch from wherever the model says
  md.validateLink = (url) => SAFE_URL.test(url.trim());
  const defaultLinkOpen = md.renderer.rules.link_open || ((tokens, i, options, env, self) => self.renderToken(tokens, i, options));
  md.renderer.rules.link_open = (tokens, i, options, env, self) => {
    tokens[i].attrSet("rel", "noopener noreferrer nofollow");
    return defaultLinkOpen(tokens, i, options, env, self);
  };
  // Table alignment arrives as a style attribute, which the page's CSP refuses: use a class instead.
  for (const rule of ["th_open", "td_open"]) {
    md.renderer.rules[rule] = (tokens, i, options, env, self) => {
      const style = tokens[i].attrGet("style");
      if (style) {
        tokens[i].attrs = (tokens[i].attrs ?? []).filter(([name]) => name !== "style");
        const align = /text-align:(left|right|center)/.exec(String(style));
        if (align) tokens[i].attrSet("class", `align-${align[1]}`);
      }
      return self.renderToken(tokens, i, options);
    };
  }
  md.core.ruler.before("text_join", "entity_marks", entityMarks);
  md.core.ruler.push("citations", (state) => {
    const env = /** @type {CitationEnv} */ (state.env); // a plain render's has no raw, and no placeholders
    /** @param {string} text */
    const restore = (text) => text.replace(PLACEHOLDER, (_, kind, n) => (kind === OPEN ? env.raw[n] : ""));
    for (const token of state.tokens) {
      if (token.type === "fence" || token.type === "code_block") token.content = restore(token.content);
      if (token.type !== "inline" || !token.children) continue;
      const children = [];
      for (const child of token.children) {
        if (child.type === "code_inline") child.content = restore(child.content);
        if (child.type !== "text" || !child.content.includes(CLOSE)) {
          children.push(child);
          continue;
        }
        let at = 0;
        for (const match of child.content.matchAll(PLACEHOLDER)) {
          if (match.index > at) children.push(textToken(state, child.content.slice(at, match.index)));
          const mark = new state.Token(match[1] === OPEN ? "citation" : "uncited", "", 0);
          mark.meta = { index: Number(match[2]) };
          children.push(mark);
          at = match.index + match[0].length;
        }
        if (at < child.content.length) children.push(textToken(state, child.content.slice(at)));
      }
      token.children = children;
    }
  });
  md.renderer.rules.citation = (tokens, i, options, env) =>
    /** @type {CitationEnv} */ (env).drawCitation(/** @type {{index: number}} */ (tokens[i].meta).index);
  md.renderer.rules.uncited = () =>
    '<span class="uncited-mark" title="This sentence cites no source">(no citation)</span>';
  return md;
}

/** @param {import("markdown-it").StateCore} state @param {string} content */
function textToken(state, content) {
  const token = new state.Token("text", "", 0);
  token.content = content;
  return token;
}

const markdown = makeMarkdown();

/** Plain Markdown to HTML, for the text while it streams (citations not yet checked show as written).
 * @param {string} text */
export function renderPlain(text) {
  return markdown.render(untrusted(text));
}

/**
 * The answer as HTML with each citation drawn from its finding and each uncited sentence marked.
 * citations: the verifier's list, each with `start`/`end` (code-point offsets into `text`);
 * uncited: [{start, end}] sentences that cite nothing; sourceId(citation): the card's element id or null.
 * @param {string} text @param {Citation[]} citations @param {Array<{start: number, end: number}>} uncited
 * @param {(citation: Citation) => string | null} sourceId
 */
export function renderVerified(text, citations, uncited, sourceId) {
  const chars = [...untrusted(text)];
  const cuts = [
    ...citations.map((c, n) => ({ start: c.start, end: c.end, insert: `${OPEN}${n}${CLOSE}` })),
    ...uncited.map((u, n) => ({ start: u.end, end: u.end, insert: `${UNCITED}${n}${CLOSE}` })),
  ].sort((a, b) => b.start - a.start || b.end - a.end);
  const raw = citations.map((c) => chars.slice(c.start, c.end).join(""));
  for (const cut of cuts) chars.splice(cut.start, cut.end - cut.start, cut.insert);
  /** @type {CitationEnv} */
  const env = { raw, drawCitation: (n) => drawCitation(citations[n], sourceId(citations[n])) };
  return markdown.render(chars.join(""), env);
}

/** @param {Citation} citation @param {string | null} sourceId */
function drawCitation(citation, sourceId) {
  const label = escapeHtml(`arXiv:${citation.arxiv_id} ${citedPages(citation)}`);
  const pdf = pdfUrl(citation, citation.found_page ?? (citation.page || 1));
  const quote = citation.quote ? escapeHtml(` “${citation.quote}”`) : "";
  if (citation.verified) {
    const target = escapeHtml(sourceId ? `#${sourceId}` : pdf);
    // the page the quote was found on, quote marked (reading_view.js opens it in the site)
    const place = { arxiv_id: citation.arxiv_id, page: citation.found_page ?? (citation.page || 1), quote: citation.quote || "" };
    return (
      `<span class="cite verified">[<a class="cite-source" href="${target}" title="Verified: ${escapeHtml(reasonText(citation))}${quote}">${label}</a>` +
      ` <a class="cite-context in-context" href="${escapeHtml(readingQuery(place))}">in context</a>` +
      ` <a class="cite-pdf" href="${escapeHtml(pdf)}" rel="noopener noreferrer">PDF</a>` +
      `<span class="cite-state"> ✓ verified</span>]</span>`
    );
  }
  const reason = escapeHtml(reasonText(citation));
  return (
    `<span class="cite unverified ${escapeHtml(citation.status || "")}" title="Not verified: ${reason}">[<span class="cite-label">${label}</span>${quote ? `<span class="cite-quote">${quote}</span>` : ""}` +
    `<span class="cite-state"> ✗ not verified: ${reason}</span>]</span>`
  );
}

/** @param {Citation[]} citations */
export function summaryLine(citations) {
  const verified = citations.filter((c) => c.verified).length;
  if (!citations.length) return "The answer cites no sources: nothing in it is verified.";
  return `${verified} of ${citations.length} citation${citations.length === 1 ? "" : "s"} verified`;
}

// --- exports -----------------------------------------------------------------------------------------

/** @param {AskCitation[]} citations @param {AskSource[]} sources @returns {CitedPaper[]} */
function citedPapers(citations, sources) {
  /** @type {Map<string, CitedPaper>} */
  const byId = new Map();
  for (const citation of citations) {
    const source = sources.find((s) => s.arxiv_id === citation.arxiv_id);
    let paper = byId.get(citation.arxiv_id);
    const version = citation.version ?? source?.version ?? "";
    if (!paper) byId.set(citation.arxiv_id, (paper = { arxiv_id: citation.arxiv_id, version, source, pages: new Set(), verified: 0, total: 0 }));
    if (citation.page) paper.pages.add(citation.page);
    paper.total += 1;
    if (citation.verified) paper.verified += 1;
  }
  return [...byId.values()];
}

/** @param {{question: string, answer: string, citations: AskCitation[], sources: AskSource[], summary: string}} turn */
export function answerMarkdown({ question, answer, citations, sources, summary }) {
  const lines = [`# ${question}`, "", answer.trim(), "", "## References", ""];
  for (const paper of citedPapers(citations, sources)) {
    const pages = [...paper.pages].sort((a, b) => a - b).map((p) => `p.${p}`).join(", ") || "no page";
    const title = paper.source ? `${paper.source.title}. ` : "";
    const state = paper.verified === paper.total ? "verified" : `${paper.verified} of ${paper.total} citations verified`;
    lines.push(`- ${title}arXiv:${paper.arxiv_id}${paper.version}, ${pages} (${state}). ${absUrl(paper)}`);
  }
  lines.push("", `${summary} (checked against the sources by Reading Room).`, "");
  return lines.join("\n");
}

/** A .bib file of the cited papers the list holds, each entry as every other place on the site writes
 * it (the references file); empty when the answer cites none of them.
 * @param {{citations: AskCitation[], sources: AskSource[]}} turn
 * @param {import("./references.js").Reference[]} references the list's, in reading-list order */
export function citedBibtex({ citations, sources }, references) {
  const cited = new Set(citedPapers(citations, sources).map((paper) => paper.arxiv_id.replace(/v\d+$/, "")));
  return bibtexFile(references.filter((reference) => cited.has(reference.arxiv_id)));
}
