// Ask mode: evidence from the search core (in the worker), the sources shown first, then the answer
// streamed from the visitor's own provider, checked by the core's verifier and drawn with each citation
// marked verified or not. Also readingRoom.ask, which drives the same turn and resolves to its data.
// Untrusted text (paper passages, model output, provider errors) reaches the DOM only through
// textContent or the Markdown renderer in answer.js.

import { ProviderError, resolvePreset, streamAnswer } from "./providers.js";
import { DEFAULT_BUDGET, clampBudget, createSettings } from "./settings.js";
import { answerMarkdown, citedBibtex, pagesLabel, pdfUrl, renderPlain, renderVerified, summaryLine } from "./answer.js";

const AUTO_RETRY_MAX_S = 10; // a 429 asking for a wait this short is retried once by itself
const DRAW_INTERVAL_MS = 80; // redraw the streaming answer at most this often
const RETRIABLE = new Set(["rate_limit", "dropped", "aborted", "network", "server", "empty", "provider"]);

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function button(text, onClick, className) {
  const node = element("button", className, text);
  node.type = "button";
  node.addEventListener("click", onClick);
  return node;
}

/** The quotes' [start, end) runs in a passage, overlaps merged. */
function mergedRanges(ranges) {
  const merged = [];
  for (const range of [...ranges].sort((a, b) => a[0] - b[0])) {
    const last = merged[merged.length - 1];
    if (last && range[0] <= last[1]) last[1] = Math.max(last[1], range[1]);
    else merged.push([...range]);
  }
  return merged;
}

function download(name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const anchor = element("a");
  anchor.href = url;
  anchor.download = name;
  document.body.append(anchor);
  anchor.click();
  anchor.remove();
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

function providerFromOptions(options, settings) {
  if (!options || !options.provider) return settings.current();
  const preset = resolvePreset(options.provider);
  return {
    provider: preset.name,
    api: preset.api,
    base_url: options.base_url || preset.base_url,
    model: options.model || preset.model,
    key: options.key || "",
    budget: clampBudget(options.budget ?? DEFAULT_BUDGET),
  };
}

export function startAsk({ config, callWorker, state }) {
  const $ = (id) => document.getElementById(id);
  const settings = createSettings(config.base);
  const section = $("ask");
  const form = $("ask-form");
  const input = $("ask-q");
  const stopButton = $("ask-stop");
  const submitButton = $("ask-submit");
  const threadBox = $("thread");
  const searchParts = [$("search-form"), $("results"), $("notice")];
  const modeButtons = { search: $("mode-search"), ask: $("mode-ask") };
  const turns = [];
  let active = null; // {controller} of the stream (or wait) in progress
  let turnCount = 0;

  // --- mode and URL ----------------------------------------------------------------------------------

  let noticeWasHidden = true;
  function setMode(mode) {
    const asking = mode === "ask";
    if (asking && !section.hidden) return;
    if (asking) noticeWasHidden = $("notice").hidden;
    section.hidden = !asking;
    for (const part of searchParts) part.hidden = asking || (part.id === "notice" && noticeWasHidden);
    modeButtons.search.setAttribute("aria-pressed", String(!asking));
    modeButtons.ask.setAttribute("aria-pressed", String(asking));
  }

  function recordUrl(question) {
    const params = new URLSearchParams();
    params.set("ask", question);
    const url = `${location.pathname}?${params}`;
    if (url !== `${location.pathname}${location.search}`) history.pushState(null, "", url);
  }

  modeButtons.ask.addEventListener("click", () => {
    setMode("ask");
    recordUrl(input.value.trim());
    input.focus();
  });
  modeButtons.search.addEventListener("click", () => {
    setMode("search");
    const query = $("q").value.trim();
    history.pushState(null, "", query ? `${location.pathname}?q=${encodeURIComponent(query)}` : location.pathname);
    $("q").focus();
  });
  window.addEventListener("popstate", () => {
    const params = new URLSearchParams(location.search);
    setMode(params.has("ask") ? "ask" : "search");
    if (params.has("ask")) input.value = params.get("ask");
  });

  // --- a turn: question, sources, answer ---------------------------------------------------------------

  function newTurn(question) {
    const id = `turn-${++turnCount}`;
    const turn = { id, question, sources: [], prompt: null, answer: "", citations: [], uncited: [], error: null, timings: {} };
    const article = element("article", "turn");
    article.id = id;
    article.dataset.state = "finding"; // then answering, done, failed, or no-key (for tests and styles)
    article.setAttribute("aria-labelledby", `${id}-q`);
    const heading = element("h3", "turn-question", question);
    heading.id = `${id}-q`;
    const sources = element("section", "sources");
    sources.setAttribute("aria-label", "Sources");
    const sourcesStatus = element("p", "turn-status", "Finding sources…");
    sourcesStatus.setAttribute("role", "status");
    const sourceList = element("ol", "source-list");
    sources.append(element("h4", null, "Sources"), sourcesStatus, sourceList);
    const answer = element("section", "answer");
    answer.setAttribute("aria-label", "Answer");
    const body = element("div", "answer-body");
    const summary = element("p", "citation-summary");
    summary.setAttribute("role", "status");
    const errorLine = element("p", "answer-error");
    errorLine.setAttribute("role", "alert");
    errorLine.hidden = true;
    const tools = element("p", "answer-tools");
    const check = drawCheckForm(turn);
    answer.append(element("h4", null, "Answer"), body, summary, errorLine, tools, check);
    article.append(heading, sources, answer);
    Object.assign(turn, { article, sourcesStatus, sourceList, body, summary, errorLine, tools, check });
    return turn;
  }

  function drawSources(turn) {
    turn.sourceList.replaceChildren(
      ...turn.sources.map((source, n) => {
        const card = element("li", "source-card");
        card.id = `${turn.id}-s${n + 1}`;
        card.tabIndex = -1;
        card.dataset.arxivId = source.arxiv_id;
        card.dataset.page = String(source.page_start);
        card.dataset.chunkId = source.chunk_id;
        const head = element("p", "source-head");
        const title = element("a", null, source.title);
        title.href = `${config.base}papers/${source.arxiv_id.replaceAll("/", "_")}/`;
        head.append(element("span", "source-n", `[${n + 1}] `), title);
        const where = element("p", "where");
        const pdf = element("a", "pdf-link", pagesLabel(source));
        pdf.href = pdfUrl(source.arxiv_id, source.page_start);
        where.append(`arXiv:${source.arxiv_id} · `, pdf);
        if (source.section) where.append(" · ", element("span", "section", source.section));
        const text = element("p", "source-text", source.text);
        card.append(head, where, text);
        return card;
      }),
    );
    turn.sourcesStatus.textContent = turn.sources.length
      ? `${turn.sources.length} passages from ${new Set(turn.sources.map((s) => s.arxiv_id)).size} papers, found in your browser.`
      : "No passages match this question; the model would have nothing to cite. Try other words.";
  }

  /** The card a citation was checked against (the verifier's 1-based source number), or -1. */
  function sourceIndexOf(turn, citation) {
    return citation.source ? citation.source - 1 : -1;
  }

  // Each verified quote marked in its card, at the verifier's offsets (code points of the card's text).
  function highlightQuotes(turn) {
    turn.sources.forEach((source, n) => {
      const cited = turn.citations.filter((c) => c.verified && sourceIndexOf(turn, c) === n);
      const chars = [...source.text];
      let at = 0;
      const runs = [];
      for (const [start, end] of mergedRanges(cited.filter((c) => c.highlight).map((c) => c.highlight))) {
        runs.push(chars.slice(at, start).join(""), element("mark", "quote", chars.slice(start, end).join("")));
        at = end;
      }
      runs.push(chars.slice(at).join(""));
      const card = turn.sourceList.children[n];
      card.querySelector(".source-text").replaceChildren(...runs);
      card.classList.toggle("cited", cited.length > 0);
    });
  }

  let drawTimer = null;
  function drawStreaming(turn) {
    if (drawTimer) return;
    drawTimer = setTimeout(() => {
      drawTimer = null;
      if (!turn.verified) turn.body.innerHTML = renderPlain(turn.answer);
    }, DRAW_INTERVAL_MS);
  }

  function drawVerified(turn) {
    clearTimeout(drawTimer);
    drawTimer = null;
    turn.verified = true;
    const sourceId = (citation) => {
      const index = sourceIndexOf(turn, citation);
      return index >= 0 ? `${turn.id}-s${index + 1}` : null;
    };
    turn.body.innerHTML = renderVerified(turn.answer, turn.citations, turn.uncited, sourceId);
    const summary = turn.citations.length ? turn.summaryText : summaryLine(turn.citations);
    turn.summary.textContent = turn.answer.trim() ? summary : "";
    highlightQuotes(turn);
  }

  function showError(turn, error) {
    turn.error = error;
    turn.errorLine.hidden = !error;
    turn.errorLine.className = `answer-error ${error ? error.kind : ""}`;
    turn.errorLine.textContent = error ? error.message : "";
  }

  function drawTools(turn, { canAnswer, offerAnswer = false }) {
    const tools = [];
    if (offerAnswer) {
      tools.push(button("Get the answer", () => answerTurn(turn, settings.current()).catch(() => {}), "get-answer"));
    }
    if (canAnswer && turn.error && RETRIABLE.has(turn.error.kind)) {
      const retry = button("Try again", () => answerTurn(turn, settings.current()).catch(() => {}), "retry");
      if (turn.error.kind === "rate_limit" && turn.error.retryAfter) countdownButton(retry, turn.error.retryAfter);
      tools.push(retry);
    }
    if (turn.prompt) tools.push(button("Copy prompt", (event) => copyPrompt(turn, event.target), "copy-prompt"));
    if (turn.sources.length) tools.push(button("Check an answer", () => openCheck(turn), "check-answer"));
    if (turn.answer.trim() && turn.verified) {
      tools.push(
        button("Download answer (Markdown)", () => download("answer.md", "text/markdown", answerMarkdown({ ...resultOf(turn), summary: turn.summary.textContent })), "export-md"),
        button("Download BibTeX", () => download("cited.bib", "application/x-bibtex", citedBibtex(resultOf(turn))), "export-bib"),
      );
    }
    turn.tools.replaceChildren(...tools);
  }

  function countdownButton(node, seconds) {
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

  async function copyPrompt(turn, target) {
    try {
      await navigator.clipboard.writeText(turn.prompt.text);
      target.textContent = "Prompt copied";
    } catch {
      // Clipboard refused: show the prompt to copy by hand.
      const box = element("textarea", "prompt-text");
      box.readOnly = true;
      box.value = turn.prompt.text;
      box.setAttribute("aria-label", "The prompt with its sources");
      turn.tools.after(box);
      box.select();
      target.textContent = "Prompt shown below";
    }
    setTimeout(() => (target.textContent = "Copy prompt"), 2500);
  }

  function drawCheckForm(turn) {
    const check = element("form", "check-form");
    check.hidden = true;
    const label = element("label", null, "Paste an answer from any chat to check its citations against these sources");
    const box = element("textarea");
    box.rows = 6;
    label.htmlFor = box.id = `${turn.id}-pasted`;
    const submit = element("button", null, "Check citations");
    submit.type = "submit";
    check.append(label, box, submit);
    check.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (!box.value.trim()) return;
      turn.answer = box.value;
      showError(turn, null);
      await verifyTurn(turn);
      drawTools(turn, { canAnswer: settings.hasKeyOrLocal() });
      turn.article.dataset.state = "checked";
    });
    return check;
  }

  function openCheck(turn) {
    turn.check.hidden = false;
    turn.check.querySelector("textarea").focus();
  }

  function resultOf(turn) {
    return {
      question: turn.question,
      answer: turn.answer,
      citations: turn.citations.map(({ arxiv_id, page, quote, verified, reason }) => ({ arxiv_id, page, quote, verified, reason })),
      sources: turn.sources.map(({ arxiv_id, page_start, page_end, chunk_id, title, text, authors, year, categories }) => ({
        arxiv_id, page_start, page_end, chunk_id, title, text, authors, year, categories,
      })),
    };
  }

  async function verifyTurn(turn) {
    const started = performance.now();
    const reply = await callWorker("verify", { answer: turn.answer, evidence: { sources: turn.sources, pages: turn.pages } });
    turn.citations = reply.citations;
    turn.uncited = reply.uncited;
    turn.summaryText = reply.summary;
    turn.timings.verify_ms = performance.now() - started;
    drawVerified(turn);
  }

  // --- streaming the answer -----------------------------------------------------------------------------

  function waitSeconds(seconds, signal, onTick) {
    return new Promise((resolve, reject) => {
      let left = seconds;
      const tick = () => {
        if (signal.aborted) return reject(new ProviderError("aborted", "Stopped while waiting to retry."));
        if (left <= 0) return resolve();
        onTick(left);
        left -= 1;
        setTimeout(tick, 1000);
      };
      tick();
    });
  }

  function stop() {
    if (active) active.controller.abort();
  }

  async function streamTurn(turn, provider) {
    const started = performance.now();
    for (let attempt = 0; ; attempt += 1) {
      const controller = new AbortController();
      active = { controller };
      stopButton.hidden = false;
      try {
        turn.answer = await streamAnswer(provider, turn.prompt, {
          signal: controller.signal,
          budget: provider.budget,
          onText: (text) => {
            turn.timings.first_text_ms ??= performance.now() - started;
            turn.answer = text;
            drawStreaming(turn);
          },
        });
        return null;
      } catch (caught) {
        const error = caught instanceof ProviderError ? caught : new ProviderError("provider", String(caught?.message || caught));
        turn.answer = error.partial ?? turn.answer;
        const shortWait = error.kind === "rate_limit" && error.retryAfter !== null && error.retryAfter <= AUTO_RETRY_MAX_S;
        if (!(shortWait && attempt === 0 && !turn.answer)) return error;
        try {
          await waitSeconds(error.retryAfter, controller.signal, (left) => {
            turn.summary.textContent = `Rate limited by the provider; trying again in ${left} s…`;
          });
          turn.summary.textContent = "";
        } catch (stopped) {
          turn.summary.textContent = "";
          return stopped;
        }
      } finally {
        active = null;
        stopButton.hidden = true;
        turn.timings.answer_ms = performance.now() - started;
      }
    }
  }

  async function answerTurn(turn, provider) {
    stop();
    turn.verified = false;
    turn.answer = "";
    turn.citations = [];
    turn.uncited = [];
    turn.body.replaceChildren();
    turn.summary.textContent = "";
    showError(turn, null);
    submitButton.disabled = true;
    turn.article.dataset.state = "answering";
    let error;
    try {
      error = await streamTurn(turn, provider);
    } finally {
      submitButton.disabled = false;
    }
    if (turn.answer.trim()) await verifyTurn(turn);
    else turn.body.replaceChildren();
    showError(turn, error);
    drawTools(turn, { canAnswer: true });
    state.last_ask = { ...turn.timings };
    turn.article.dataset.state = error ? "failed" : "done";
    if (error) {
      const failure = new Error(error.message);
      Object.assign(failure, { kind: error.kind, retry_after: error.retryAfter, result: resultOf(turn) });
      throw failure;
    }
    return resultOf(turn);
  }

  // requireKey: the page's form (without a key, stop at the sources and offer the prompt);
  // fromLink: a question from ?ask= in the URL, which a link's author chose: the sources are found, but
  // nothing goes to the provider (nor spends the visitor's tokens) until the visitor asks for it.
  async function runTurn(question, provider, { requireKey, fromLink = false }) {
    stop();
    setMode("ask");
    const turn = newTurn(question);
    turns.push(turn);
    threadBox.append(turn.article);
    const started = performance.now();
    const history = turns.filter((t) => t !== turn && t.answer.trim()).map((t) => ({ question: t.question, answer: t.answer }));
    try {
      const evidence = await callWorker("evidence", { question, history, budget: provider.budget });
      turn.sources = evidence.sources;
      turn.pages = evidence.pages; // the cited pages' full text, which verification reads
      turn.prompt = evidence.prompt;
    } catch (error) {
      turn.sourcesStatus.textContent = `Could not find sources: ${error.message}`;
      turn.sourcesStatus.classList.add("error");
      turn.article.dataset.state = "failed";
      throw error;
    }
    drawSources(turn);
    turn.timings.sources_ms = performance.now() - started;
    state.last_ask = { ...turn.timings };
    if (!turn.sources.length) {
      turn.article.dataset.state = "done";
      drawTools(turn, { canAnswer: false });
      return resultOf(turn);
    }
    if (requireKey && !settings.hasKeyOrLocal()) {
      turn.summary.textContent =
        "No API key set, so no answer here. Add one under “Model and key”, or copy the prompt into any chat and paste the answer into “Check an answer”.";
      drawTools(turn, { canAnswer: false });
      turn.article.dataset.state = "no-key";
      return resultOf(turn);
    }
    if (fromLink) {
      turn.summary.textContent = `Opened from a link: press “Get the answer” to send the question and these sources to ${provider.base_url}.`;
      drawTools(turn, { canAnswer: false, offerAnswer: true });
      turn.article.dataset.state = "ready";
      return resultOf(turn);
    }
    return answerTurn(turn, provider);
  }

  // --- controls ------------------------------------------------------------------------------------------

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const question = input.value.trim();
    if (!question) return;
    recordUrl(question);
    runTurn(question, settings.current(), { requireKey: true }).catch(() => {}); // shown in the turn
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  stopButton.addEventListener("click", stop);
  $("ask-new").addEventListener("click", () => {
    stop();
    turns.length = 0;
    threadBox.replaceChildren();
    input.value = "";
    input.focus();
  });

  const api = {
    /** Ask with the given provider (or the settings panel's); resolves when the stream has ended. */
    ask(question, options) {
      return runTurn(String(question), providerFromOptions(options, settings), { requireKey: false });
    },
    stop,
  };

  const initial = new URLSearchParams(location.search);
  if (initial.has("ask")) {
    setMode("ask");
    input.value = initial.get("ask");
    if (input.value.trim()) {
      runTurn(input.value.trim(), settings.current(), { requireKey: true, fromLink: true }).catch(() => {});
    }
  }
  return api;
}
