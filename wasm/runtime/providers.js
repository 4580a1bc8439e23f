// Streaming chat clients for the visitor's own LLM provider: OpenAI-compatible chat completions,
// Anthropic Messages and Google Gemini, each over fetch + ReadableStream with its own SSE wire format.
// The key travels in a request header to the chosen base URL only: never in a URL, never logged.
// Every API is sent the answer cap; why the model stopped reaches `onFinish` ("length" at the cap).

import { LOCAL_ACCESS_HELP, addressSpace, nothingListening, whyUnreachable } from "./local_server.js";

/** @typedef {import("./local_server.js").ServerJson} ServerJson */
/** @typedef {{system: string, messages: import("./protocol.js").ChatMessage[]}} ChatPrompt */
/** @typedef {{api: string, base_url: string, model: string, key: string, max_tokens?: number}} ProviderSettings */
/** @typedef {{label: string, api: string, base_url: string, model: string, local?: boolean}} Preset */

/** @type {{[name: string]: Preset}} */
export const PRESETS = {
  openai: { label: "OpenAI", api: "openai", base_url: "https://api.openai.com/v1", model: "gpt-4o-mini" },
  openrouter: { label: "OpenRouter", api: "openai", base_url: "https://openrouter.ai/api/v1", model: "openai/gpt-4o-mini" },
  groq: { label: "Groq", api: "openai", base_url: "https://api.groq.com/openai/v1", model: "llama-3.3-70b-versatile" },
  mistral: { label: "Mistral", api: "openai", base_url: "https://api.mistral.ai/v1", model: "mistral-small-latest" },
  together: { label: "Together", api: "openai", base_url: "https://api.together.xyz/v1", model: "meta-llama/Llama-3.3-70B-Instruct-Turbo" },
  ollama: { label: "Ollama (this computer)", api: "openai", base_url: "http://localhost:11434/v1", model: "llama3.1", local: true },
  lmstudio: { label: "LM Studio (this computer)", api: "openai", base_url: "http://localhost:1234/v1", model: "", local: true },
  llamacpp: { label: "llama.cpp llama-server (this computer)", api: "openai", base_url: "http://localhost:8080/v1", model: "", local: true },
  llamacpppython: { label: "llama-cpp-python server (this computer)", api: "openai", base_url: "http://localhost:8000/v1", model: "", local: true },
  vllm: { label: "vLLM (this computer)", api: "openai", base_url: "http://localhost:8000/v1", model: "", local: true },
  custom: { label: "Other OpenAI-compatible endpoint", api: "openai", base_url: "", model: "" },
  anthropic: { label: "Anthropic", api: "anthropic", base_url: "https://api.anthropic.com", model: "claude-sonnet-4-5" },
  gemini: { label: "Google Gemini", api: "gemini", base_url: "https://generativelanguage.googleapis.com", model: "gemini-2.5-flash" },
};

// The API names a caller of readingRoom.ask may give instead of a preset.
/** @type {{[api: string]: string}} */
const API_ALIASES = { "openai-compatible": "custom" };
const ANTHROPIC_VERSION = "2023-06-01";
export const DEFAULT_MAX_TOKENS = 1500; // the answer cap (readingroom_core.answers.DEFAULT_MAX_TOKENS)
const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

// Said when the provider cannot be reached at all: a browser reports a CORS refusal exactly like a
// network failure, so both are named.
export const BROWSER_CALLS_HELP =
  "Some providers do not accept calls from a web page (CORS). OpenAI, Anthropic (this site sends the " +
  "header Anthropic requires for browser calls; an organisation can still switch them off), Google Gemini, " +
  "OpenRouter and Mistral do. A server on this computer must allow this site's origin: Ollama through " +
  "OLLAMA_ORIGINS, LM Studio through its CORS switch, vLLM through --allowed-origins; llama.cpp's " +
  "llama-server and llama-cpp-python allow any origin unless started otherwise. A server on this computer " +
  "must also be running at the base URL.";

const CONTEXT_HELP =
  "A server on this computer (llama.cpp, Ollama) does this when the prompt is longer than its context window: " +
  "try again with a smaller budget, or set the model's context window in the settings.";

export class ProviderError extends Error {
  /** kind: auth | rate_limit | model_not_found | context_too_long | bad_request | server | network |
   *  local_access | aborted | dropped | empty | provider | settings. retryAfter: seconds, for rate_limit.
   * @param {string} kind @param {string} message
   * @param {{status?: number | null, retryAfter?: number | null}} [details] */
  constructor(kind, message, { status = null, retryAfter = null } = {}) {
    super(message);
    this.kind = kind;
    this.status = status;
    this.retryAfter = retryAfter;
    /** @type {string | undefined} the answer's text when the stream ended early */
    this.partial = undefined;
  }
}

/** @param {string} provider a preset's name, or an API alias */
export function resolvePreset(provider) {
  const name = API_ALIASES[provider] || provider;
  const preset = PRESETS[name];
  if (!preset) {
    throw new ProviderError("settings", `Unknown provider "${provider}"; choose one of: ${Object.keys(PRESETS).join(", ")}.`);
  }
  return { name, ...preset };
}

/** The base URL as a URL, refusing anything that would send a key in the clear to another machine.
 * @param {string} text */
export function checkedBaseUrl(text) {
  let url;
  try {
    url = new URL(text);
  } catch {
    throw new ProviderError("settings", `The base URL "${text}" is not a URL; give one such as https://api.openai.com/v1.`);
  }
  const loopback = LOOPBACK_HOSTS.has(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) {
    throw new ProviderError("settings", `The base URL must use https (plain http only for a server on this computer): ${url.origin}.`);
  }
  if (url.username || url.password || url.search || url.hash) {
    throw new ProviderError("settings", "The base URL must not carry a user name, password, query or fragment; put the key in the key field.");
  }
  return url;
}

/** @param {URL} base @param {string} path */
function endpoint(base, path) {
  return base.href.replace(/\/+$/, "") + path;
}

/**
 * {url, headers, body} of the streaming request; the key appears in one header and nowhere else. A server
 * on this computer may go without a model name (llama.cpp serves the one it loaded).
 * @param {ProviderSettings} settings
 * @param {ChatPrompt} prompt
 */
export function buildRequest({ api, base_url, model, key, max_tokens = DEFAULT_MAX_TOKENS }, { system, messages }) {
  const base = checkedBaseUrl(base_url);
  const local = api === "openai" && addressSpace(base.href) !== "public";
  if (!model && !local) throw new ProviderError("settings", "Choose a model name in the settings.");
  /** @type {{[name: string]: string}} */
  const headers = { "content-type": "application/json" };
  if (api === "openai") {
    if (key) headers.authorization = `Bearer ${key}`;
    const body = { ...(model ? { model } : {}), stream: true, max_tokens, messages: [{ role: "system", content: system }, ...messages] };
    return { url: endpoint(base, "/chat/completions"), headers, body };
  }
  if (api === "anthropic") {
    if (key) headers["x-api-key"] = key;
    headers["anthropic-version"] = ANTHROPIC_VERSION;
    headers["anthropic-dangerous-direct-browser-access"] = "true";
    const path = /\/v1\/?$/.test(base.pathname) ? "/messages" : "/v1/messages";
    return { url: endpoint(base, path), headers, body: { model, system, messages, max_tokens, stream: true } };
  }
  if (api === "gemini") {
    if (key) headers["x-goog-api-key"] = key;
    const prefix = /\/v1(beta)?\/?$/.test(base.pathname) ? "" : "/v1beta";
    const contents = messages.map(({ role, content }) => ({ role: role === "assistant" ? "model" : "user", parts: [{ text: content }] }));
    const body = { systemInstruction: { parts: [{ text: system }] }, contents, generationConfig: { maxOutputTokens: max_tokens } };
    return { url: endpoint(base, `${prefix}/models/${encodeURIComponent(model)}:streamGenerateContent?alt=sse`), headers, body };
  }
  throw new ProviderError("settings", `Unknown API "${api}".`);
}

// --- Server-sent events ----------------------------------------------------------------------------

const YIELD_EVERY_MS = 16; // a fast stream hands the page back this often, so Stop and typing still work

/** Resolves after the event loop has run other tasks (a resolved read() alone never lets it). */
function nextTask() {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** Yields {event, data} for each event of an SSE body (https://html.spec.whatwg.org/#event-stream-interpretation).
 * @param {ReadableStream<Uint8Array> | null} body null (a reply without one) fails as a cut stream does
 * @param {AbortSignal} [signal] @returns {AsyncGenerator<{event: string, data: string}>} */
export async function* sseEvents(body, signal) {
  if (!body) throw new TypeError("the reply has no body");
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const newline = /\r\n|\r|\n/g;
  let buffer = "";
  let event = "";
  /** @type {string[]} */
  let data = [];
  let lastYield = performance.now();
  const onAbort = () => reader.cancel().catch(() => {});
  signal?.addEventListener("abort", onAbort);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      // Lines are read by position and the buffer cut once per chunk: cutting it per line is quadratic.
      let at = 0;
      newline.lastIndex = 0;
      for (let match = newline.exec(buffer); match; match = newline.exec(buffer)) {
        if (match[0] === "\r" && match.index === buffer.length - 1) break; // maybe the first half of \r\n
        const line = buffer.slice(at, match.index);
        at = newline.lastIndex;
        if (line === "") {
          if (data.length) yield { event: event || "message", data: data.join("\n") };
          event = "";
          data = [];
        } else if (!line.startsWith(":")) {
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (field === "data") data.push(value);
          else if (field === "event") event = value;
        }
      }
      buffer = buffer.slice(at);
      if (performance.now() - lastYield > YIELD_EVERY_MS) {
        await nextTask();
        lastYield = performance.now();
      }
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    reader.cancel().catch(() => {}); // a reader left early (after the end mark) hangs up
  }
}

/** @param {string} text @returns {ServerJson} null when it is not JSON */
function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** A delta's text; anything but a string (an object, a number, null) adds nothing, never "[object Object]".
 * A lone surrogate (JSON's \ud800 escape) becomes U+FFFD here: kept, it would fail every later turn of
 * the thread, whose history the core must encode.
 * @param {unknown} value */
function textOf(value) {
  return typeof value === "string" ? value.replace(LONE_SURROGATE, "\uFFFD") : "";
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

const LENGTH_REASONS = new Set(["length", "max_tokens", "MAX_TOKENS"]);

/** Why the model stopped, "length" for the answer cap in any API's words; "" when the event does not say.
 * @param {unknown} reason */
function stopReason(reason) {
  if (typeof reason !== "string" || !reason) return "";
  return LENGTH_REASONS.has(reason) ? "length" : reason;
}

/** What one event adds: {text, done, end, error, stop}; `end` is the API's own last event. Each API marks its own end, so a cut stream is told apart.
 * @param {string} api @param {{event: string, data: string}} event
 * @returns {{text?: string, done?: boolean, end?: boolean, error?: unknown, stop?: string}} */
function readEvent(api, { event, data }) {
  if (api === "openai") {
    if (data.trim() === "[DONE]") return { done: true, end: true };
    const json = parseJson(data);
    if (json?.error) return { error: json.error.message || JSON.stringify(json.error) };
    const choice = json?.choices?.[0];
    return { text: textOf(choice?.delta?.content), done: Boolean(choice?.finish_reason), stop: stopReason(choice?.finish_reason) };
  }
  if (api === "anthropic") {
    const json = parseJson(data);
    if (event === "error" || json?.type === "error") return { error: json?.error?.message || data };
    if (json?.type === "content_block_delta" && json.delta?.type === "text_delta") return { text: textOf(json.delta.text) };
    if (json?.type === "message_delta") return { stop: stopReason(json.delta?.stop_reason) };
    return { done: json?.type === "message_stop", end: json?.type === "message_stop" };
  }
  const json = parseJson(data); // gemini
  if (json?.error) return { error: json.error.message || JSON.stringify(json.error) };
  const candidate = json?.candidates?.[0];
  const parts = Array.isArray(candidate?.content?.parts) ? candidate.content.parts : [];
  const text = parts.map((/** @type {ServerJson} */ part) => textOf(part?.text)).join("");
  return { text, done: Boolean(candidate?.finishReason), stop: stopReason(candidate?.finishReason) };
}

// --- errors ------------------------------------------------------------------------------------------

/** Seconds to wait from a Retry-After header (seconds or an HTTP date), or from the error's own words.
 * @param {string | null} header @param {string} [bodyText] */
export function retryAfterSeconds(header, bodyText = "") {
  if (header) {
    const seconds = Number(header);
    if (Number.isFinite(seconds)) return Math.max(0, Math.ceil(seconds));
    const date = Date.parse(header);
    if (!Number.isNaN(date)) return Math.max(0, Math.ceil((date - Date.now()) / 1000));
  }
  const hint = /retryDelay"?\s*:\s*"(\d+(?:\.\d+)?)s"|try again in (\d+(?:\.\d+)?)\s*s/i.exec(bodyText);
  return hint ? Math.ceil(Number(hint[1] || hint[2])) : null;
}

/** @param {string} bodyText */
function providerMessage(bodyText) {
  const json = parseJson(bodyText);
  const error = json?.error;
  const text = typeof error === "string" ? error : error?.message || json?.message || bodyText;
  return String(text || "").slice(0, 300);
}

const CONTEXT_WORDS = /context|too long|too many tokens|maximum.*tokens|token limit|prompt is too long/i;

/** @param {number} status @param {string} bodyText @param {string | null} retryAfterHeader
 * @param {{model: string, budget: number | null}} request */
export function errorForResponse(status, bodyText, retryAfterHeader, { model, budget }) {
  const said = providerMessage(bodyText);
  const detail = said ? ` The provider said: “${said}”` : "";
  if (status === 401 || status === 403 || /API_KEY_INVALID|API key not valid/.test(bodyText)) {
    return new ProviderError("auth", `The provider refused the key (HTTP ${status}). Check the key and the provider in the settings; a key belongs to one provider.${detail}`, { status });
  }
  if (status === 429) {
    const retryAfter = retryAfterSeconds(retryAfterHeader, bodyText);
    const when = retryAfter === null ? "in a minute" : `in ${retryAfter} s`;
    return new ProviderError("rate_limit", `Rate limited by the provider (HTTP 429): too many requests or tokens for now. Try again ${when}.${detail}`, { status, retryAfter });
  }
  if ((status === 400 || status === 413 || status === 422) && CONTEXT_WORDS.test(said)) {
    return new ProviderError("context_too_long", `The prompt is too long for “${model || "the model"}” (HTTP ${status}). Try again with a smaller budget (now ${budget} tokens), set the model's context window in the settings, or choose a model with a longer context.${detail}`, { status });
  }
  if (status === 404) {
    return new ProviderError("model_not_found", `The provider does not know the model “${model}” or the address (HTTP 404). Check the model name and the base URL in the settings.${detail}`, { status });
  }
  if (status >= 500) {
    return new ProviderError("server", `The provider had a fault (HTTP ${status}). Try again shortly.${detail}`, { status });
  }
  return new ProviderError("bad_request", `The provider rejected the request (HTTP ${status}). Check the model name and settings.${detail}`, { status });
}

// --- streaming ---------------------------------------------------------------------------------------

/**
 * Streams one answer: onText(fullTextSoFar) after each piece. Resolves to the full text; rejects with a
 * ProviderError whose kind says what went wrong (the partial text is on `error.partial`).
 */
/**
 * @param {ProviderSettings} settings
 * @param {ChatPrompt} prompt
 * @param {{signal?: AbortSignal, onText?: (text: string) => void, onFinish?: (reason: string) => void, budget?: number | null}} [options]
 */
export async function streamAnswer(settings, prompt, { signal, onText = () => {}, onFinish = () => {}, budget = null } = {}) {
  const { url, headers, body } = buildRequest(settings, prompt);
  let text = "";
  const fail = (/** @type {ProviderError} */ error) => {
    error.partial = text;
    return error;
  };
  let response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      signal,
      credentials: "omit",
      redirect: "error", // a redirect would carry the key's header to wherever it points
      referrerPolicy: "no-referrer",
      cache: "no-store",
    });
  } catch {
    if (signal?.aborted) throw fail(new ProviderError("aborted", "Stopped before the provider answered."));
    const why = await whyUnreachable(url);
    if (why === "denied") throw fail(new ProviderError("local_access", `Could not reach ${new URL(url).origin}. ${LOCAL_ACCESS_HELP} (If it was allowed: ${BROWSER_CALLS_HELP})`));
    if (why === "nothing") throw fail(new ProviderError("network", nothingListening(url)));
    if (why === "refused") throw fail(new ProviderError("network", `A server answers at ${new URL(url).origin} but turned this page's call away: it must allow this site's origin (${location.origin}). ${BROWSER_CALLS_HELP}`));
    throw fail(new ProviderError("network", `Could not reach ${new URL(url).origin}: the network is down, the base URL is wrong, or the provider does not allow calls from a web page. ${BROWSER_CALLS_HELP}`));
  }
  if (!response.ok) {
    const bodyText = await response.text().catch(() => "");
    throw fail(errorForResponse(response.status, bodyText, response.headers.get("retry-after"), { model: settings.model, budget }));
  }
  let finished = false;
  try {
    for await (const event of sseEvents(response.body, signal)) {
      const step = readEvent(settings.api, event);
      if (step.error) throw new ProviderError("provider", `The provider stopped with an error: “${String(step.error).slice(0, 300)}”. Try again.`);
      if (step.text) {
        text += step.text;
        onText(text);
      }
      if (step.stop) onFinish(step.stop);
      if (step.done) finished = true;
      if (step.end) break; // what follows the stream's end mark is not part of the answer
    }
  } catch (error) {
    if (error instanceof ProviderError) throw fail(error);
    if (!signal?.aborted) throw fail(new ProviderError("dropped", "The connection dropped before the answer was finished. The partial answer is kept; ask again to retry."));
  }
  if (signal?.aborted) throw fail(new ProviderError("aborted", "Stopped. The partial answer is kept; ask again for a full one."));
  if (!text.trim()) throw fail(new ProviderError("empty", `The server ended the stream without any answer. ${CONTEXT_HELP}`));
  if (!finished) throw fail(new ProviderError("dropped", "The connection dropped before the answer was finished. The partial answer is kept; ask again to retry."));
  return text;
}
