// Ask mode: evidence from the search core (in the worker), the sources shown first, then the answer
// streamed from the visitor's own provider, checked by the core's verifier and drawn with each citation
// marked verified or not (ask_turn.js draws a turn). Also readingRoom.ask, which drives the same turn and
// resolves to its data. A server on this computer is asked for its models and context window first, so
// the sources and the answer fit; while it reads the prompt the turn says how long it has waited; an
// answer cut at its cap can be continued, and an overflow retried with a smaller budget.

import { answerMarkdown, citedBibtex } from "./answer.js";
import { Turn, countdownButton } from "./ask_turn.js";
import { button, byId, element, saveFile } from "./dom.js";
import { ProviderError, streamAnswer } from "./providers.js";
import { loadReferences } from "./references.js";
import { LlmSettings, isLocal, providerFromOptions, withServerFacts } from "./settings.js";

/** @typedef {import("./protocol.js").AppConfig} AppConfig */
/** @typedef {import("./protocol.js").Status} Status */
/** @typedef {import("./search_client.js").SearchClient["request"]} Request */
/** @typedef {import("./settings.js").Provider} Provider */
/** @typedef {import("./providers.js").ChatPrompt} ChatPrompt */

const AUTO_RETRY_MAX_S = 10; // a 429 asking for a wait this short is retried once by itself
const RETRIABLE = new Set(["rate_limit", "dropped", "aborted", "network", "local_access", "server", "provider"]);
const TOO_LONG = new Set(["empty", "context_too_long"]); // retried with a smaller budget
const CONTINUE = "Continue the answer exactly where it stopped, without repeating it, citing every claim as before.";
const $ = byId;

/** The window to fit a retry into after a refusal for length (readingroom_core.tokens.smaller_window).
 * @param {number} promptTokens @param {number} answerTokens */
function smallerWindow(promptTokens, answerTokens) {
  return Math.max(512, Math.min(2048, Math.floor((promptTokens + answerTokens) / 2)));
}

/** Wait `seconds`, telling `onTick` each second left; rejects when `signal` aborts.
 * @param {number} seconds @param {AbortSignal} signal @param {(left: number) => void} onTick @returns {Promise<void>} */
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

class AskMode {
  /** @param {{config: AppConfig, request: Request, state: Status, semanticReady: Promise<void>}} options */
  constructor({ config, request, state, semanticReady }) {
    this.config = config;
    this.semanticReady = semanticReady;
    this.request = request;
    this.state = state;
    this.settings = new LlmSettings(config.base);
    this.section = $("ask");
    this.input = /** @type {HTMLTextAreaElement} */ ($("ask-q"));
    this.stopButton = $("ask-stop");
    this.submitButton = /** @type {HTMLButtonElement} */ ($("ask-submit"));
    this.threadBox = $("thread");
    this.modeButtons = { search: $("mode-search"), ask: $("mode-ask") };
    /** @type {Turn[]} */
    this.turns = [];
    this.turnCount = 0; // turn ids stay unique across "New thread"
    /** @type {{controller: AbortController} | null} the stream (or wait) in progress */
    this.active = null;
    this.noticeWasHidden = true;
  }

  // --- mode and URL ------------------------------------------------------------------------------------

  /** @param {"search" | "ask"} mode */
  setMode(mode) {
    const asking = mode === "ask";
    if (asking && !this.section.hidden) return;
    if (asking) this.noticeWasHidden = $("notice").hidden;
    this.section.hidden = !asking;
    for (const part of [$("search-form"), $("results"), $("notice")]) {
      part.hidden = asking || (part.id === "notice" && this.noticeWasHidden);
    }
    this.modeButtons.search.setAttribute("aria-pressed", String(!asking));
    this.modeButtons.ask.setAttribute("aria-pressed", String(asking));
  }

  /** @param {string} question */
  recordUrl(question) {
    const params = new URLSearchParams();
    params.set("ask", question);
    const url = `${location.pathname}?${params}`;
    if (url !== `${location.pathname}${location.search}`) history.pushState(null, "", url);
  }

  bindControls() {
    this.modeButtons.ask.addEventListener("click", () => {
      this.setMode("ask");
      this.recordUrl(this.input.value.trim());
      this.input.focus();
    });
    this.modeButtons.search.addEventListener("click", () => {
      this.setMode("search");
      const query = /** @type {HTMLInputElement} */ ($("q")).value.trim();
      history.pushState(null, "", query ? `${location.pathname}?q=${encodeURIComponent(query)}` : location.pathname);
      $("q").focus();
    });
    window.addEventListener("popstate", () => {
      const params = new URLSearchParams(location.search);
      this.setMode(params.has("ask") ? "ask" : "search");
      if (params.has("ask")) this.input.value = String(params.get("ask"));
    });
    const form = /** @type {HTMLFormElement} */ ($("ask-form"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const question = this.input.value.trim();
      if (!question) return;
      this.recordUrl(question);
      this.runTurn(question, this.settings.current(), { requireKey: true }).catch(() => {}); // shown in the turn
    });
    this.input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    this.stopButton.addEventListener("click", () => this.stop());
    $("ask-new").addEventListener("click", () => {
      this.stop();
      this.turns.length = 0;
      this.threadBox.replaceChildren();
      this.input.value = "";
      this.input.focus();
    });
  }

  // --- a turn's tools ------------------------------------------------------------------------------------

  /** @param {Turn} turn @param {{canAnswer: boolean, offerAnswer?: boolean}} options */
  drawTools(turn, { canAnswer, offerAnswer = false }) {
    const answer = () => this.answerTurn(turn, this.settings.current()).catch(() => {});
    const tools = [];
    if (offerAnswer) tools.push(button("Get the answer", answer, "get-answer"));
    if (canAnswer && turn.error && RETRIABLE.has(turn.error.kind)) {
      const retry = button("Try again", answer, "retry");
      if (turn.error.kind === "rate_limit" && turn.error.retryAfter) countdownButton(retry, turn.error.retryAfter);
      tools.push(retry);
    }
    if (canAnswer && turn.error && TOO_LONG.has(turn.error.kind)) {
      const fitted = smallerWindow(turn.promptTokens, turn.answerCap);
      const retry = () => this.retrySmaller(turn, { ...this.settings.current(), context: fitted, contextSource: "the retry" }).catch(() => {});
      tools.push(button(`Try again with a smaller budget (fitted to ${fitted} tokens)`, retry, "retry-smaller"));
    }
    if (canAnswer && !turn.error && turn.stopReason === "length") {
      tools.push(button("Continue the answer", () => this.continueTurn(turn, this.settings.current()).catch(() => {}), "continue"));
    }
    if (turn.prompt) {
      tools.push(button("Copy prompt", (event) => turn.copyPrompt(/** @type {HTMLElement} */ (event.target)), "copy-prompt"));
    }
    if (turn.sources.length) {
      const check = button("Check an answer", () => turn.toggleCheck(check), "check-answer");
      check.setAttribute("aria-expanded", String(!turn.check.hidden));
      check.setAttribute("aria-controls", turn.check.id);
      tools.push(check);
    }
    if (turn.answer.trim() && turn.verified) {
      const markdown = () => answerMarkdown({ ...turn.result(), summary: turn.summary.textContent });
      tools.push(button("Download answer (Markdown)", () => saveFile("answer.md", "text/markdown", markdown()), "export-md"));
      // BibTeX only for what the answer cites, entries as the references file holds them.
      const references = this.config.references;
      const cited = () => loadReferences(references).then((all) => citedBibtex(turn.result(), all));
      const save = button("Download BibTeX", () => cited().then(
        (entries) => (entries ? saveFile("cited.bib", "application/x-bibtex", entries) : (save.textContent = "No cited paper is on the list")),
        (/** @type {Error} */ error) => (save.textContent = error.message),
      ), "export-bib");
      if (turn.citations.some((citation) => citation.status !== "invented")) tools.push(save); // one on the list
    }
    turn.tools.replaceChildren(...tools);
  }

  /** The form to paste an answer from any chat into, checked against this turn's sources. @param {Turn} turn */
  checkForm(turn) {
    const check = element("form", "check-form");
    check.id = `${turn.id}-check`;
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
      turn.showError(null);
      await this.verifyTurn(turn);
      this.drawTools(turn, { canAnswer: this.settings.hasKeyOrLocal() });
      turn.setState("checked");
    });
    return check;
  }

  /** @param {Turn} turn */
  async verifyTurn(turn) {
    const started = performance.now();
    const evidence = { sources: turn.sources, pages: turn.pages };
    const reply = await this.request("verify", { answer: turn.answer, evidence });
    Object.assign(turn, { citations: reply.citations, uncited: reply.uncited, summaryText: reply.summary });
    turn.timings.verify_ms = performance.now() - started;
    turn.drawVerified();
  }

  // --- streaming the answer -----------------------------------------------------------------------------

  stop() {
    if (this.active) this.active.controller.abort();
  }

  /**
   * The answer streamed into `turn` (after `prefix`, when continuing one); resolves with the error that
   * ended it, or null. @param {Turn} turn @param {Provider} provider @param {ChatPrompt} prompt @param {string} [prefix]
   * @returns {Promise<ProviderError | null>}
   */
  async streamTurn(turn, provider, prompt, prefix = "") {
    const started = performance.now();
    const settings = { ...provider, max_tokens: turn.answerCap || provider.max_tokens };
    turn.stopReason = "";
    for (let attempt = 0; ; attempt += 1) {
      const controller = new AbortController();
      this.active = { controller };
      this.stopButton.hidden = false;
      const waiting = turn.showWaiting(turn.promptTokens);
      try {
        turn.answer = prefix + (await streamAnswer(settings, prompt, {
          signal: controller.signal,
          budget: turn.budget,
          onFinish: (reason) => (turn.stopReason = reason),
          onText: (text) => {
            turn.timings.first_text_ms ??= performance.now() - started;
            waiting.stop();
            turn.answer = prefix + text;
            turn.drawStreaming();
          },
        }));
        return null;
      } catch (caught) {
        const described = /** @type {{message?: unknown} | null | undefined} */ (caught)?.message;
        const error = caught instanceof ProviderError ? caught : new ProviderError("provider", String(described || caught));
        turn.answer = prefix + (error.partial ?? "");
        const { retryAfter } = error;
        const shortWait = error.kind === "rate_limit" && retryAfter !== null && retryAfter <= AUTO_RETRY_MAX_S;
        if (!(shortWait && attempt === 0 && !turn.answer) || retryAfter === null) return error; // null: not shortWait
        const stopped = await this.waitToRetry(turn, retryAfter, controller.signal);
        if (stopped) return stopped;
      } finally {
        waiting.stop();
        this.active = null;
        this.stopButton.hidden = true;
        turn.timings.answer_ms = performance.now() - started;
      }
    }
  }

  /** The provider's requested wait, counted down on the turn; resolves with the error if stopped, or null.
   * @param {Turn} turn @param {number} seconds @param {AbortSignal} signal @returns {Promise<ProviderError | null>} */
  async waitToRetry(turn, seconds, signal) {
    try {
      await waitSeconds(seconds, signal, (left) => {
        turn.summary.textContent = `Rate limited by the provider; trying again in ${left} s…`;
      });
      return null;
    } catch (stopped) {
      return /** @type {ProviderError} waitSeconds's "aborted" */ (stopped);
    } finally {
      turn.summary.textContent = "";
    }
  }

  /** @param {Turn} turn @param {Provider} provider @param {string} [prefix] the answer so far, to continue */
  async answerTurn(turn, provider, prefix = "") {
    this.stop();
    const asked = turn.prompt;
    if (!asked) throw new Error("this turn has no prompt: its sources were not found"); // nothing offers to answer then
    const prompt = prefix ? { ...asked, messages: [...asked.messages, { role: "assistant", content: prefix }, { role: "user", content: CONTINUE }] } : asked;
    Object.assign(turn, { verified: false, answer: prefix, citations: [], uncited: [] });
    if (!prefix) turn.body.replaceChildren();
    turn.summary.textContent = "";
    turn.showError(null);
    this.submitButton.disabled = true;
    turn.setState("answering");
    let error;
    try {
      error = await this.streamTurn(turn, await withServerFacts(provider), prompt, prefix);
    } finally {
      this.submitButton.disabled = false;
    }
    if (turn.answer.trim()) await this.verifyTurn(turn);
    else turn.body.replaceChildren();
    turn.showError(error);
    if (!error && turn.stopReason === "length") turn.showCut(turn.answerCap || provider.max_tokens);
    this.drawTools(turn, { canAnswer: true });
    this.state.last_ask = { ...turn.timings };
    turn.setState(error ? "failed" : "done");
    if (error) {
      const failure = new Error(error.message);
      Object.assign(failure, { kind: error.kind, retry_after: error.retryAfter, result: turn.result() });
      throw failure;
    }
    return turn.result();
  }

  /** The sources of `turn`'s question from the worker, drawn; throws (shown in the turn) when none came.
   * @param {Turn} turn @param {Provider} provider */
  async findSources(turn, provider) {
    const started = performance.now();
    const history = this.turns.filter((t) => t !== turn && t.answer.trim()).map((t) => ({ question: t.question, answer: t.answer }));
    // Sources are gathered by hybrid search: a question asked (or opened from a link) while semantic
    // search loads waits for it; if it fails to load, keyword search finds them.
    if (!this.state.semantic && !this.state.semantic_error) {
      turn.sourcesStatus.textContent = "Waiting for semantic search to load, to find the sources…";
      await this.semanticReady.catch(() => {});
      turn.sourcesStatus.textContent = "Finding sources…";
    }
    try {
      const { budget, context, max_tokens } = provider;
      // A hosted model's name lets the core size the sources to its family's window; a local server's
      // window is its own (asked above), whatever the model.
      const model = isLocal(provider) ? "" : provider.model;
      const evidence = await this.request("evidence", { question: turn.question, history, budget, context, max_tokens, model });
      Object.assign(turn, { sources: evidence.sources, pages: evidence.pages, prompt: evidence.prompt });
      Object.assign(turn, { promptTokens: evidence.prompt_tokens, answerCap: evidence.answer_tokens, budget: evidence.budget });
    } catch (error) {
      turn.sourcesStatus.textContent = `Could not find sources: ${/** @type {Error} */ (error).message}`;
      turn.sourcesStatus.classList.add("error");
      turn.setState("failed");
      throw error;
    }
    turn.drawSources(this.config.base);
    if (provider.context) {
      turn.sourcesStatus.textContent += ` Fitted to a context window of ${provider.context} tokens (from ${provider.contextSource || "the settings"}): ${turn.promptTokens} for the prompt, ${turn.answerCap} for the answer.`;
    }
    turn.timings.sources_ms = performance.now() - started;
    this.state.last_ask = { ...turn.timings };
  }

  // requireKey: the page's form (without a key, stop at the sources and offer the prompt);
  // fromLink: a question from ?ask= in the URL, which a link's author chose: the sources are found, but
  // nothing goes to the provider (nor spends the visitor's tokens) until the visitor asks for it.
  /** @param {string} question @param {Provider} provider @param {{requireKey: boolean, fromLink?: boolean}} how */
  async runTurn(question, provider, { requireKey, fromLink = false }) {
    this.stop();
    this.setMode("ask");
    const turn = new Turn(++this.turnCount, question, (t) => this.checkForm(t));
    this.turns.push(turn);
    this.threadBox.append(turn.article);
    const fitted = fromLink ? provider : await withServerFacts(provider);
    await this.findSources(turn, fitted);
    if (!turn.sources.length) {
      turn.setState("done");
      this.drawTools(turn, { canAnswer: false });
      return turn.result();
    }
    if (requireKey && !this.settings.hasKeyOrLocal()) {
      turn.summary.textContent =
        "No API key set, so no answer here. Add one under “Model and key”, or copy the prompt into any chat and paste the answer into “Check an answer”.";
      this.drawTools(turn, { canAnswer: false });
      turn.answerFirst();
      turn.setState("no-key");
      return turn.result();
    }
    if (fromLink) {
      turn.summary.textContent = `Opened from a link: press “Get the answer” to send the question and these sources to ${provider.base_url}.`;
      this.drawTools(turn, { canAnswer: false, offerAnswer: true });
      turn.setState("ready");
      return turn.result();
    }
    return this.answerTurn(turn, fitted);
  }

  /** The turn's sources found again under a smaller budget, then answered. @param {Turn} turn @param {Provider} provider */
  async retrySmaller(turn, provider) {
    this.stop();
    turn.sourceList.replaceChildren();
    turn.sourcesStatus.textContent = "Finding sources…";
    await this.findSources(turn, provider);
    return this.answerTurn(turn, provider);
  }

  /** The cut answer continued: the model is shown what it wrote and asked to go on.
   * @param {Turn} turn @param {Provider} provider */
  continueTurn(turn, provider) {
    return this.answerTurn(turn, provider, turn.answer);
  }
}

/** Start Ask mode on the search page; returns what readingRoom.ask drives.
 * @param {ConstructorParameters<typeof AskMode>[0]} options
 * @returns {{ask: import("./protocol.js").ReadingRoom["ask"], stop: () => void}} */
export function startAsk(options) {
  const mode = new AskMode(options);
  mode.bindControls();
  const initial = new URLSearchParams(location.search);
  if (initial.has("ask")) {
    mode.setMode("ask");
    mode.input.value = String(initial.get("ask"));
    const question = mode.input.value.trim();
    if (question) mode.runTurn(question, mode.settings.current(), { requireKey: true, fromLink: true }).catch(() => {});
  }
  return {
    /** Ask with the given provider (or the settings panel's); resolves when the stream has ended. */
    ask: (question, options) => mode.runTurn(String(question), providerFromOptions(options, mode.settings), { requireKey: false }),
    stop: () => mode.stop(),
  };
}
