// One turn of Ask mode on screen: the question, its source cards (with verified quotes marked), the
// answer as it streams and once checked, its error line, and what a turn gives readingRoom.ask.
// Untrusted text reaches the DOM only through textContent or the Markdown renderer in answer.js.

import { renderPlain, renderVerified, summaryLine } from "./answer.js";
import { pagesLabel, paperPageUrl, pdfUrl } from "./citation.js";
import { counted, element, link } from "./dom.js";

/** @typedef {import("./protocol.js").Source} Source */
/** @typedef {import("./protocol.js").Citation} Citation */
/** @typedef {{kind: string, message: string, retryAfter?: number | null}} TurnError what ended the answer (a ProviderError) */

const DRAW_INTERVAL_MS = 80; // redraw the streaming answer at most this often…
const DRAW_SHARE = 4; // …and wait at least this many times the last redraw's time, so drawing a long
// answer never takes more than a fifth of the page's time
export const SHOWN_CHARS = 200_000; // a longer answer is cut: drawn, checked and exported up to here

/** @param {Array<[number, number]>} ranges the quotes' [start, end) runs in a passage @returns overlaps merged */
function mergedRanges(ranges) {
  /** @type {Array<[number, number]>} */
  const merged = [];
  for (const range of [...ranges].sort((a, b) => a[0] - b[0])) {
    const last = merged[merged.length - 1];
    if (last && range[0] <= last[1]) last[1] = Math.max(last[1], range[1]);
    else merged.push([...range]);
  }
  return merged;
}

export class Turn {
  /**
   * @param {number} number
   * @param {string} question
   * @param {(turn: Turn) => HTMLFormElement} makeCheckForm the "Check an answer" form of this turn
   */
  constructor(number, question, makeCheckForm) {
    this.id = `turn-${number}`;
    this.question = question;
    /** @type {Source[]} */
    this.sources = [];
    /** @type {import("./protocol.js").PageTexts | null} the cited pages' full text, which verification reads */
    this.pages = null;
    /** @type {import("./protocol.js").Prompt | null} */
    this.prompt = null;
    this.answerText = "";
    this.fullLength = 0; // the answer's length before it was cut to SHOWN_CHARS
    /** @type {string | null} */
    this.drawnText = null;
    this.drawCost = 0;
    /** @type {Citation[]} */
    this.citations = [];
    /** @type {import("./protocol.js").Uncited[]} */
    this.uncited = [];
    this.summaryText = "";
    this.verified = false;
    /** @type {TurnError | null} */
    this.error = null;
    this.promptTokens = 0; // the prompt's estimated tokens, as the evidence counted them
    this.answerCap = 0; // the answer cap sent: the room left for it in the model's context window
    this.budget = 0; // the prompt budget the sources were fitted to
    this.stopReason = ""; // why the model stopped: "length" when it reached answerCap
    /** @type {import("./protocol.js").AskTimings} */
    this.timings = {};
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.drawTimer = null;
    this.article = element("article", "turn");
    this.article.id = this.id;
    this.article.setAttribute("aria-labelledby", `${this.id}-q`);
    this.setState("finding");
    // The parts drawSourcesBox and drawAnswerBox lay out.
    this.sourcesStatus = element("p", "turn-status", "Finding sources…");
    this.sourceList = element("ol", "source-list");
    this.body = element("div", "answer-body");
    this.summary = element("p", "citation-summary");
    this.errorLine = element("p", "answer-error");
    this.tools = element("p", "answer-tools");
    const heading = element("h3", "turn-question", question);
    heading.id = `${this.id}-q`;
    this.check = makeCheckForm(this);
    this.sourcesBox = this.drawSourcesBox();
    this.answerBox = this.drawAnswerBox();
    this.article.append(heading, this.sourcesBox, this.answerBox);
  }

  /** The answer's box (its message and tools) above the sources: where a turn stops before an answer
   * (no key), what the visitor can do next must not lie screens below the sources; the turn is
   * scrolled so that its question and those tools are in view. */
  answerFirst() {
    this.article.insertBefore(this.answerBox, this.sourcesBox);
    this.article.classList.add("answer-first");
    this.article.scrollIntoView({ block: "start" });
  }

  /** The answer as drawn and checked: at most SHOWN_CHARS of what the model wrote. */
  get answer() {
    return this.answerText;
  }

  set answer(text) {
    const whole = String(text);
    const wasCut = this.fullLength > SHOWN_CHARS;
    if (whole.length < this.fullLength) this.drawnText = null; // a new answer: draw it even if it repeats
    this.fullLength = whole.length;
    if (whole.length <= SHOWN_CHARS) this.answerText = whole;
    else if (!wasCut) this.answerText = whole.slice(0, SHOWN_CHARS).replace(/[\uD800-\uDBFF]$/, ""); // cut once
  }

  /** A visible note when the answer was cut, or null. */
  cutNote() {
    if (this.fullLength <= SHOWN_CHARS) return null;
    const count = (/** @type {number} */ n) => n.toLocaleString("en");
    return element("p", "answer-cut", `Answer cut to its first ${count(this.answerText.length)} of ${count(this.fullLength)} characters: only these are shown and checked.`);
  }

  /** finding, answering, ready, done, checked, failed or no-key (for tests and styles) @param {string} state */
  setState(state) {
    this.article.dataset.state = state;
  }

  drawSourcesBox() {
    const sources = element("section", "sources");
    sources.setAttribute("aria-label", "Sources");
    this.sourcesStatus.setAttribute("role", "status");
    sources.append(element("h4", null, "Sources"), this.sourcesStatus, this.sourceList);
    return sources;
  }

  drawAnswerBox() {
    const answer = element("section", "answer");
    answer.setAttribute("aria-label", "Answer");
    this.summary.setAttribute("role", "status");
    this.errorLine.setAttribute("role", "alert");
    this.errorLine.hidden = true;
    answer.append(element("h4", null, "Answer"), this.body, this.summary, this.errorLine, this.tools, this.check);
    return answer;
  }

  /** @param {string} base the site's base URL, for its paper pages */
  drawSources(base) {
    this.sourceList.replaceChildren(
      ...this.sources.map((source, n) => {
        const card = element("li", "source-card");
        card.id = `${this.id}-s${n + 1}`;
        card.tabIndex = -1;
        card.dataset.arxivId = source.arxiv_id;
        card.dataset.page = String(source.page_start);
        card.dataset.chunkId = source.chunk_id;
        const head = element("p", "source-head");
        head.append(element("span", "source-n", `[${n + 1}] `), link(paperPageUrl(base, source.arxiv_id), source.title));
        const where = element("p", "where");
        where.append(`arXiv:${source.arxiv_id}${source.version || ""} · `, link(pdfUrl(source, source.page_start), pagesLabel(source), "pdf-link"));
        if (source.section) where.append(" · ", element("span", "section", source.section));
        card.append(head, where, element("p", "source-text", source.text));
        return card;
      }),
    );
    const papers = new Set(this.sources.map((s) => s.arxiv_id)).size;
    this.sourcesStatus.textContent = this.sources.length
      ? `${counted(this.sources.length, "passage")} from ${counted(papers, "paper")}, found in your browser.`
      : "No passages match this question; the model would have nothing to cite. Try other words.";
  }

  /** The index of the card a citation was checked against (the verifier's 1-based source), or -1.
   * @param {Citation} citation */
  static sourceIndexOf(citation) {
    return citation.source ? citation.source - 1 : -1;
  }

  // Each verified quote marked in its card, at the verifier's offsets (code points of the card's text).
  highlightQuotes() {
    this.sources.forEach((source, n) => {
      const cited = this.citations.filter((c) => c.verified && Turn.sourceIndexOf(c) === n);
      const chars = [...source.text];
      let at = 0;
      /** @type {Array<string | HTMLElement>} */
      const runs = [];
      for (const [start, end] of mergedRanges(cited.flatMap((c) => (c.highlight ? [c.highlight] : [])))) {
        runs.push(chars.slice(at, start).join(""), element("mark", "quote", chars.slice(start, end).join("")));
        at = end;
      }
      runs.push(chars.slice(at).join(""));
      const card = this.sourceList.children[n];
      /** @type {Element} drawSources wrote it */ (card.querySelector(".source-text")).replaceChildren(...runs);
      card.classList.toggle("cited", cited.length > 0);
    });
  }

  /** The answer so far, redrawn while it streams, at most every DRAW_INTERVAL_MS and never more than a
   * fifth of the time; a cut answer no longer changes, so it is not drawn again. */
  drawStreaming() {
    if (this.drawTimer) return;
    this.drawTimer = setTimeout(() => {
      this.drawTimer = null;
      if (this.verified || this.drawnText === this.answer) return;
      const started = performance.now();
      this.drawnText = this.answer;
      this.body.innerHTML = renderPlain(this.answer);
      const note = this.cutNote();
      if (note) this.body.append(note);
      this.drawCost = performance.now() - started;
    }, Math.max(DRAW_INTERVAL_MS, DRAW_SHARE * this.drawCost));
  }

  /** The checked answer: each citation drawn from its finding and linked to its card. */
  drawVerified() {
    clearTimeout(this.drawTimer ?? undefined);
    this.drawTimer = null;
    this.verified = true;
    const sourceId = (/** @type {Citation} */ citation) => {
      const index = Turn.sourceIndexOf(citation);
      return index >= 0 ? `${this.id}-s${index + 1}` : null;
    };
    this.body.innerHTML = renderVerified(this.answer, this.citations, this.uncited, sourceId);
    const note = this.cutNote();
    if (note) this.body.append(note);
    this.drawnText = null;
    const summary = this.citations.length ? this.summaryText : summaryLine(this.citations);
    this.summary.textContent = this.answer.trim() ? summary : "";
    this.highlightQuotes();
  }

  /**
   * "Waiting for the model (N tokens sent, M s)" in the summary until `stop()`: a local model can read a
   * prompt for a minute before its first word. @param {number} tokens @returns {{stop: () => void}}
   */
  showWaiting(tokens) {
    const started = performance.now();
    const tick = () => {
      const seconds = Math.floor((performance.now() - started) / 1000);
      this.summary.textContent = `Waiting for the model (${tokens.toLocaleString("en")} tokens sent, ${seconds} s)…`;
    };
    tick();
    const timer = setInterval(tick, 1000);
    let stopped = false;
    return {
      stop: () => {
        if (stopped) return;
        stopped = true;
        clearInterval(timer);
        this.summary.textContent = "";
      },
    };
  }

  /** A visible note that the answer reached its cap and ends there. @param {number} tokens */
  showCut(tokens) {
    this.body.append(element("p", "answer-cut", `Cut off at ${tokens.toLocaleString("en")} tokens: the answer reached its longest length. “Continue the answer” asks for the rest.`));
  }

  /** @param {TurnError | null} error */
  showError(error) {
    this.error = error;
    this.errorLine.hidden = !error;
    this.errorLine.className = `answer-error ${error ? error.kind : ""}`;
    this.errorLine.textContent = error ? error.message : "";
  }

  /** Copy the prompt; a refused clipboard shows it below the tools to copy by hand. @param {HTMLElement} target */
  async copyPrompt(target) {
    if (!this.prompt) return; // offered only with one
    const { text } = this.prompt;
    try {
      await navigator.clipboard.writeText(text);
      target.textContent = "Prompt copied";
    } catch {
      const box = element("textarea", "prompt-text");
      box.readOnly = true;
      box.value = text;
      box.setAttribute("aria-label", "The prompt with its sources");
      this.tools.after(box);
      box.select();
      target.textContent = "Prompt shown below";
    }
    setTimeout(() => (target.textContent = "Copy prompt"), 2500);
  }

  /** Open (or close again) the form to paste an answer into; `toggle` is the button that does it.
   * @param {HTMLElement} toggle */
  toggleCheck(toggle) {
    this.check.hidden = !this.check.hidden;
    toggle.setAttribute("aria-expanded", String(!this.check.hidden));
    if (!this.check.hidden) /** @type {HTMLTextAreaElement} the form's */ (this.check.querySelector("textarea")).focus();
  }

  /** What readingRoom.ask resolves to, and what the exports are made from. @returns {import("./protocol.js").AskResult} */
  result() {
    return {
      question: this.question,
      answer: this.answer,
      stop_reason: this.stopReason,
      citations: this.citations.map(({ arxiv_id, version, page, quote, verified, reason }) => ({ arxiv_id, version, page, quote, verified, reason })),
      sources: this.sources.map(({ arxiv_id, version, page_start, page_end, chunk_id, title, text, authors, year, categories }) => ({
        arxiv_id, version, page_start, page_end, chunk_id, title, text, authors, year, categories,
      })),
    };
  }
}

/** A button that stays disabled for `seconds`, counting down on its label.
 * @param {HTMLButtonElement} node @param {number} seconds */
export function countdownButton(node, seconds) {
  const label = node.textContent;
  node.disabled = true;
  let left = seconds;
  const tick = () => {
    if (left <= 0) {
      node.disabled = false;
      node.textContent = label;
      return;
    }
    node.textContent = `${label} (in ${left} s)`;
    left -= 1;
    setTimeout(tick, 1000);
  };
  tick();
}
