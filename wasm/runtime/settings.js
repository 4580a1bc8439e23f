// The provider settings panel: provider preset, base URL, model, key, prompt budget.
// The key lives in this module's memory; it is written to sessionStorage or localStorage only when the
// visitor chooses to remember it, and "Forget key" removes it from both and from memory.

import { PRESETS, resolvePreset } from "./providers.js";

export const DEFAULT_BUDGET = 6000; // prompt tokens: fits every current hosted model and most local ones
const MIN_BUDGET = 500;
const MAX_BUDGET = 1_000_000;

function storageNames(base) {
  // GitHub Pages serves many sites from one origin: name the entries after this site's path.
  return { settings: `readingroom:${base}:llm-settings`, key: `readingroom:${base}:llm-key` };
}

function readStorage(storage, name) {
  try {
    return storage.getItem(name);
  } catch {
    return null; // storage disabled
  }
}

function writeStorage(storage, name, value) {
  try {
    if (value === null) storage.removeItem(name);
    else storage.setItem(name, value);
  } catch {
    // storage disabled or full: the value stays in memory only
  }
}

export function clampBudget(value) {
  const number = Math.round(Number(value));
  if (!Number.isFinite(number) || number <= 0) return DEFAULT_BUDGET;
  return Math.min(MAX_BUDGET, Math.max(MIN_BUDGET, number));
}

export function createSettings(base) {
  const names = storageNames(base);
  /** @type {(id: string) => HTMLInputElement} the settings' fields (the provider is a select, alike here) */
  const $ = (id) => /** @type {HTMLInputElement} */ (document.getElementById(id));
  const fields = {
    provider: $("llm-provider"),
    base_url: $("llm-base-url"),
    model: $("llm-model"),
    key: $("llm-key"),
    budget: $("llm-budget"),
  };
  const remember = [.../** @type {NodeListOf<HTMLInputElement>} */ (document.querySelectorAll('input[name="llm-remember"]'))];
  const warning = $("llm-remember-warning");
  const note = $("llm-settings-note");
  let key = "";

  for (const [name, preset] of Object.entries(PRESETS)) {
    const option = document.createElement("option");
    option.value = name;
    option.textContent = preset.label;
    fields.provider.append(option);
  }

  function rememberWhere() {
    return (remember.find((radio) => radio.checked) || remember[0]).value; // memory | session | local
  }

  function storeKey() {
    const where = rememberWhere();
    writeStorage(sessionStorage, names.key, where === "session" && key ? key : null);
    writeStorage(localStorage, names.key, where === "local" && key ? key : null);
  }

  function saveSettings() {
    const saved = {
      provider: fields.provider.value,
      base_url: fields.base_url.value.trim(),
      model: fields.model.value.trim(),
      budget: clampBudget(fields.budget.value),
      remember: rememberWhere(),
    };
    writeStorage(localStorage, names.settings, JSON.stringify(saved));
  }

  function showWarning() {
    warning.hidden = rememberWhere() === "memory";
  }

  function applyPreset(name) {
    const preset = resolvePreset(name);
    fields.base_url.value = preset.base_url;
    fields.model.value = preset.model;
  }

  // Restore: settings without the key always; the key only from where the visitor chose to keep it.
  const saved = JSON.parse(readStorage(localStorage, names.settings) || "null");
  if (saved && PRESETS[saved.provider]) {
    fields.provider.value = saved.provider;
    fields.base_url.value = saved.base_url || PRESETS[saved.provider].base_url;
    fields.model.value = saved.model ?? PRESETS[saved.provider].model;
    fields.budget.value = String(clampBudget(saved.budget));
    for (const radio of remember) radio.checked = radio.value === (saved.remember || "memory");
  } else {
    fields.provider.value = "openai";
    applyPreset("openai");
    fields.budget.value = String(DEFAULT_BUDGET);
  }
  key = readStorage(sessionStorage, names.key) || readStorage(localStorage, names.key) || "";
  fields.key.value = key;
  showWarning();

  fields.provider.addEventListener("change", () => {
    applyPreset(fields.provider.value);
    saveSettings();
  });
  for (const name of ["base_url", "model", "budget"]) fields[name].addEventListener("change", saveSettings);
  fields.key.addEventListener("input", () => {
    key = fields.key.value.trim();
    storeKey();
  });
  for (const radio of remember) {
    radio.addEventListener("change", () => {
      showWarning();
      storeKey();
      saveSettings();
    });
  }
  $("llm-forget-key").addEventListener("click", () => {
    key = "";
    fields.key.value = "";
    writeStorage(sessionStorage, names.key, null);
    writeStorage(localStorage, names.key, null);
    note.textContent = "Key forgotten: removed from this page and from the browser's storage.";
  });

  return {
    /** The settings as readingRoom.ask takes them, with the API the preset speaks. */
    current() {
      const provider = fields.provider.value;
      return {
        provider,
        api: resolvePreset(provider).api,
        base_url: fields.base_url.value.trim(),
        model: fields.model.value.trim(),
        key,
        budget: clampBudget(fields.budget.value),
      };
    },
    hasKeyOrLocal() {
      return Boolean(key) || Boolean(resolvePreset(fields.provider.value).local);
    },
    open() {
      /** @type {HTMLDetailsElement} */ (document.getElementById("llm-settings")).open = true;
      fields.key.focus();
    },
  };
}
