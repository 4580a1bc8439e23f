// The visitor's own list: papers they collect from results and paper pages ("Add to my list"), kept in
// this browser's localStorage only, and exported with references.js. Every toggle on the page follows a
// change, from this tab or another.

import { button } from "./dom.js";

const KEY = "readingroom-my-list";
const CHANGED = "readingroom-my-list-changed";
let unsaved = /** @type {string[]} */ ([]); // where storage is off: this page's list

/** The collected arXiv ids, in the order added. @returns {string[]} */
export function myList() {
  try {
    const stored = JSON.parse(localStorage.getItem(KEY) || "[]");
    return Array.isArray(stored) ? stored.filter((id) => typeof id === "string") : [];
  } catch {
    return unsaved;
  }
}

/** @param {string[]} ids */
function save(ids) {
  unsaved = ids;
  try {
    localStorage.setItem(KEY, JSON.stringify(ids));
  } catch {
    // storage off or full: the list lasts as long as the page
  }
  window.dispatchEvent(new Event(CHANGED));
}

/** Add `arxivId` to the list, or take it out. @param {string} arxivId */
export function toggle(arxivId) {
  const ids = myList();
  save(ids.includes(arxivId) ? ids.filter((id) => id !== arxivId) : [...ids, arxivId]);
}

export function clearMyList() {
  save([]);
}

/** Call `listener` whenever the list changes (here or in another tab). @param {() => void} listener */
export function onListChange(listener) {
  window.addEventListener(CHANGED, listener);
  window.addEventListener("storage", (event) => event.key === KEY && listener());
}

/** @param {HTMLButtonElement} toggleButton */
function drawToggle(toggleButton) {
  const on = myList().includes(toggleButton.dataset.arxivId || "");
  toggleButton.textContent = on ? "On my list ✓" : "Add to my list";
  toggleButton.setAttribute("aria-pressed", String(on));
  toggleButton.setAttribute("aria-label", `${on ? "On my list" : "Add to my list"}: ${toggleButton.dataset.title}`);
}

// One listener redraws every toggle on the page, however often the results are drawn again.
onListChange(() => document.querySelectorAll("button.my-list-toggle").forEach((b) => drawToggle(/** @type {HTMLButtonElement} */ (b))));

/** "Add to my list" / "On my list ✓", a toggle button for one paper. @param {string} arxivId @param {string} title */
export function listToggle(arxivId, title) {
  const toggleButton = /** @type {HTMLButtonElement} */ (button("", () => toggle(arxivId), "my-list-toggle"));
  Object.assign(toggleButton.dataset, { arxivId, title });
  drawToggle(toggleButton);
  return toggleButton;
}
