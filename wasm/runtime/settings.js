// The provider settings panel: provider preset, base URL, model (a local server's models offered from its
// list), key, prompt budget, the model's context window (optional; a local server is asked for it) and the
// answer cap.
// A key belongs to the provider and the base URL origin it was typed for, and is sent nowhere else: each
// such pair keeps its own key, and the key field shows the current pair's (empty when none was typed for
// it). Keys live in this module's memory; they are written to sessionStorage or localStorage only when the
// visitor chooses to remember them, and "Forget keys" removes every one from both and from memory.

import { byId } from "./dom.js";
import { addressSpace, contextWindow, modelNames } from "./local_server.js";
import { DEFAULT_MAX_TOKENS, PRESETS, resolvePreset } from "./providers.js";

export const DEFAULT_BUDGET = 4500; // prompt tokens (readingroom_core.answers.DEFAULT_BUDGET): fits 8k-context models
const MIN_BUDGET = 500;
const MAX_BUDGET = 1_000_000;
const MIN_ANSWER = 16;

/**
 * A provider as a turn uses it: the panel's choice (LlmSettings.current) or readingRoom.ask's options, with
 * a local server's facts filled in (withServerFacts).
 * @typedef {object} Provider
 * @property {string} provider the preset's name
 * @property {string} api
 * @property {string} base_url
 * @property {string} model
 * @property {string} key
 * @property {number | null} budget the prompt budget the visitor set; null: sized to the model
 * @property {number | null} context the model's context window, when known
 * @property {number} max_tokens
 * @property {string} [contextSource] who told the context window
 */

/** @param {string} base */
function storageNames(base) {
  // GitHub Pages serves many sites from one origin: name the entries after this site's path.
  return { settings: `readingroom:${base}:llm-settings`, key: `readingroom:${base}:llm-key` };
}

/** The provider and base URL origin a key is bound to ("" for a base URL that is not a URL).
 * @param {string} provider @param {string} baseUrl */
function keySlot(provider, baseUrl) {
  let origin = "";
  try {
    origin = new URL(baseUrl).origin;
  } catch {
    // not a URL yet: the key stays bound to this provider without an origin
  }
  return `${provider} ${origin}`;
}

/** @param {Storage} storage @param {string} name */
function readStorage(storage, name) {
  try {
    return storage.getItem(name);
  } catch {
    return null; // storage disabled
  }
}

/** @param {Storage} storage @param {string} prefix */
function storedNames(storage, prefix) {
  try {
    return Object.keys(storage).filter((name) => name.startsWith(prefix));
  } catch {
    return []; // storage disabled
  }
}

/** @param {Storage} storage @param {string} name @param {string | null} value null removes it */
function writeStorage(storage, name, value) {
  try {
    if (value === null) storage.removeItem(name);
    else storage.setItem(name, value);
  } catch {
    // storage disabled or full: the value stays in memory only
  }
}

/** The prompt budget from its field (or the saved settings): the default when blank or nonsense.
 * @param {unknown} value */
export function clampBudget(value) {
  return budgetOrNull(value) ?? DEFAULT_BUDGET;
}

/** The prompt budget the visitor set, or null when blank or nonsense: then the core sizes it to the
 * model's context window where that is known (readingroom_core.answers.request_budget), else the default.
 * @param {unknown} value */
export function budgetOrNull(value) {
  const number = Math.round(Number(value));
  if (!String(value ?? "").trim() || !Number.isFinite(number) || number <= 0) return null;
  return Math.min(MAX_BUDGET, Math.max(MIN_BUDGET, number));
}

/** The answer cap from its field: a whole number of tokens, the default when blank or nonsense.
 * @param {unknown} value */
export function clampMaxTokens(value) {
  const number = Math.round(Number(value));
  if (!Number.isFinite(number) || number <= 0) return DEFAULT_MAX_TOKENS;
  return Math.min(MAX_BUDGET, Math.max(MIN_ANSWER, number));
}

/** The context window from its field, or null when blank (then a local server is asked for it).
 * @param {unknown} value */
export function contextOrNull(value) {
  const number = Math.round(Number(value));
  return String(value).trim() && Number.isFinite(number) && number > 0 ? Math.min(MAX_BUDGET * 4, number) : null;
}

/** The panel's fields, restored from storage and saved on every change. */
export class LlmSettings {
  /** @param {string} base the site's base URL, which names its storage entries */
  constructor(base) {
    this.names = storageNames(base);
    /** @type {(id: string) => HTMLInputElement} the panel's fields (the provider is a select, alike here) */
    const $ = (id) => /** @type {HTMLInputElement} */ (document.getElementById(id));
    this.fields = {
      provider: $("llm-provider"),
      base_url: $("llm-base-url"),
      model: $("llm-model"),
      key: $("llm-key"),
      budget: $("llm-budget"),
      context: $("llm-context"),
      max_tokens: $("llm-max-tokens"),
    };
    this.modelList = byId("llm-model-list");
    this.remember = [.../** @type {NodeListOf<HTMLInputElement>} */ (document.querySelectorAll('input[name="llm-remember"]'))];
    this.warning = $("llm-remember-warning");
    this.note = $("llm-settings-note");
    /** @type {Map<string, string>} key by keySlot */
    this.keys = new Map();
    for (const [name, preset] of Object.entries(PRESETS)) {
      const option = document.createElement("option");
      option.value = name;
      option.textContent = preset.label;
      this.fields.provider.append(option);
    }
    this.restore();
    this.bind();
  }

  rememberWhere() {
    return (this.remember.find((radio) => radio.checked) || this.remember[0]).value; // memory | session | local
  }

  slot() {
    return keySlot(this.fields.provider.value, this.fields.base_url.value.trim());
  }

  /** The key typed for the current provider and base URL origin. */
  get key() {
    return this.keys.get(this.slot()) || "";
  }

  // Each slot's key under its own name, in the one storage the visitor chose (or none).
  /** @param {string} slot */
  storeKey(slot) {
    const where = this.rememberWhere();
    const key = this.keys.get(slot) || null;
    const name = `${this.names.key}:${slot}`;
    writeStorage(sessionStorage, name, where === "session" ? key : null);
    writeStorage(localStorage, name, where === "local" ? key : null);
  }

  showKey() {
    this.fields.key.value = this.key;
  }

  save() {
    const { provider, base_url, model, budget, context, max_tokens } = this.fields;
    const saved = {
      provider: provider.value,
      base_url: base_url.value.trim(),
      model: model.value.trim(),
      budget: budgetOrNull(budget.value),
      context: contextOrNull(context.value),
      max_tokens: clampMaxTokens(max_tokens.value),
      remember: this.rememberWhere(),
    };
    writeStorage(localStorage, this.names.settings, JSON.stringify(saved));
  }

  showWarning() {
    this.warning.hidden = this.rememberWhere() === "memory";
  }

  /** @param {string} name */
  applyPreset(name) {
    const preset = resolvePreset(name);
    this.fields.base_url.value = preset.base_url;
    this.fields.model.value = preset.model;
  }

  /** A local server's listed models, offered under the model field when it gets focus (asked only of a
   * local preset, and only then: choosing a preset sends nothing anywhere). */
  async offerModels() {
    this.modelList.replaceChildren();
    if (!resolvePreset(this.fields.provider.value).local) return;
    const names = await modelNames(this.fields.base_url.value.trim()).catch(() => []);
    this.modelList.replaceChildren(
      ...names.map((name) => {
        const option = document.createElement("option");
        option.value = name;
        return option;
      }),
    );
  }

  // Settings without the key always; the key only from where the visitor chose to keep it.
  restore() {
    const fields = this.fields;
    const saved = JSON.parse(readStorage(localStorage, this.names.settings) || "null");
    if (saved && PRESETS[saved.provider]) {
      fields.provider.value = saved.provider;
      fields.base_url.value = saved.base_url || PRESETS[saved.provider].base_url;
      fields.model.value = saved.model ?? PRESETS[saved.provider].model;
      const budget = budgetOrNull(saved.budget);
      fields.budget.value = budget ? String(budget) : "";
      fields.context.value = saved.context ? String(saved.context) : "";
      fields.max_tokens.value = String(clampMaxTokens(saved.max_tokens));
      for (const radio of this.remember) radio.checked = radio.value === (saved.remember || "memory");
    } else {
      fields.provider.value = "openai";
      this.applyPreset("openai");
      fields.budget.value = ""; // sized to the model's window where known, else DEFAULT_BUDGET
      fields.max_tokens.value = String(DEFAULT_MAX_TOKENS);
    }
    // An entry named without a slot comes from a version that sent one key to every provider: whose it
    // was is unknown, so it is dropped.
    writeStorage(sessionStorage, this.names.key, null);
    writeStorage(localStorage, this.names.key, null);
    const prefix = `${this.names.key}:`;
    for (const storage of [localStorage, sessionStorage]) {
      for (const name of storedNames(storage, prefix)) {
        const key = readStorage(storage, name);
        if (key) this.keys.set(name.slice(prefix.length), key);
      }
    }
    this.showKey();
    this.showWarning();
  }

  bind() {
    const fields = this.fields;
    fields.provider.addEventListener("change", () => {
      this.applyPreset(fields.provider.value);
      this.showKey();
      this.save();
    });
    // Every edit of the base URL may move it to another origin, which has its own key (or none).
    fields.base_url.addEventListener("input", () => this.showKey());
    for (const name of /** @type {const} */ (["base_url", "model", "budget", "context", "max_tokens"])) fields[name].addEventListener("change", () => this.save());
    fields.model.addEventListener("focus", () => this.offerModels());
    fields.key.addEventListener("input", () => {
      const slot = this.slot();
      const key = fields.key.value.trim();
      if (key) this.keys.set(slot, key);
      else this.keys.delete(slot);
      this.storeKey(slot);
    });
    for (const radio of this.remember) {
      radio.addEventListener("change", () => {
        this.showWarning();
        for (const slot of this.keys.keys()) this.storeKey(slot);
        this.save();
      });
    }
    byId("llm-forget-key").addEventListener("click", () => {
      this.keys.clear();
      fields.key.value = "";
      for (const storage of [sessionStorage, localStorage]) {
        for (const name of storedNames(storage, this.names.key)) writeStorage(storage, name, null);
      }
      this.note.textContent = "Keys forgotten: every provider's key removed from this page and from the browser's storage.";
    });
  }

  /** The settings as readingRoom.ask takes them, with the API the preset speaks. @returns {Provider} */
  current() {
    const { provider, base_url, model, budget, context, max_tokens } = this.fields;
    return {
      provider: provider.value,
      api: resolvePreset(provider.value).api,
      base_url: base_url.value.trim(),
      model: model.value.trim(),
      key: this.key,
      budget: budgetOrNull(budget.value),
      context: contextOrNull(context.value),
      max_tokens: clampMaxTokens(max_tokens.value),
    };
  }

  hasKeyOrLocal() {
    return Boolean(this.key) || Boolean(resolvePreset(this.fields.provider.value).local);
  }
}

// --- a provider as a turn uses it ---------------------------------------------------------------------

/** readingRoom.ask's options as a provider, or else the panel's.
 * @param {import("./protocol.js").AskOptions | undefined} options @param {LlmSettings} settings @returns {Provider} */
export function providerFromOptions(options, settings) {
  if (!options || !options.provider) return settings.current();
  const preset = resolvePreset(options.provider);
  return {
    provider: preset.name,
    api: preset.api,
    base_url: options.base_url || preset.base_url,
    model: options.model || preset.model,
    key: options.key || "",
    budget: budgetOrNull(options.budget ?? ""),
    context: contextOrNull(options.context ?? ""),
    max_tokens: clampMaxTokens(options.max_tokens ?? DEFAULT_MAX_TOKENS),
  };
}

/** Whether the provider is a local server's preset on this computer or network (asked for its window and
 * models); another endpoint is asked nothing but the answer. @param {Provider} provider */
export function isLocal(provider) {
  try {
    const preset = resolvePreset(provider.provider || "custom");
    return Boolean(preset.local) && provider.api === "openai" && addressSpace(provider.base_url) !== "public";
  } catch {
    return false; // not a URL, or no such preset: the request itself will say so
  }
}

/** The provider with a local server's first listed model and its reported context window filled in.
 * @param {Provider} provider @returns {Promise<Provider>} */
export async function withServerFacts(provider) {
  if (!isLocal(provider)) return provider;
  const model = provider.model || (await modelNames(provider.base_url))[0] || "";
  const reported = provider.context ? null : await contextWindow({ base_url: provider.base_url, model });
  const contextSource = provider.contextSource || (reported ? `the server's ${reported.source}` : "the settings");
  return { ...provider, model, context: provider.context || reported?.tokens || null, contextSource };
}
