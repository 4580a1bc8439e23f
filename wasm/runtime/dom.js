// DOM helpers shared by the search page and Ask mode. Untrusted text (titles, passages, model output)
// goes in as textContent, never as markup.

/**
 * @template {keyof HTMLElementTagNameMap} T
 * @param {T} tag
 * @param {string | null} [className]
 * @param {string} [text]
 * @returns {HTMLElementTagNameMap[T]}
 */
export function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** @param {string} href @param {string} text @param {string} [className] */
export function link(href, text, className) {
  const anchor = element("a", className, text);
  anchor.href = href;
  return anchor;
}

/** @param {string} text @param {(event: MouseEvent) => void} onClick @param {string} [className] */
export function button(text, onClick, className) {
  const node = element("button", className, text);
  node.type = "button";
  node.addEventListener("click", onClick);
  return node;
}

/** Copy `text`, saying so on `target` for two seconds; a refused clipboard shows the text to copy by hand. */
export async function copyText(text, target) {
  const label = target.textContent;
  try {
    await navigator.clipboard.writeText(text);
    target.textContent = "Copied";
  } catch {
    target.textContent = text;
  }
  setTimeout(() => (target.textContent = label), 2000);
}

/** Save `text` as a file named `name` (a download the browser asks about or just does). */
export function saveFile(name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const anchor = element("a");
  anchor.href = url;
  anchor.download = name;
  document.body.append(anchor);
  anchor.click();
  anchor.remove();
  setTimeout(() => URL.revokeObjectURL(url), 0);
}
