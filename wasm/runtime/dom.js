// DOM helpers shared by the search page and Ask mode. Untrusted text (titles, passages, model output)
// goes in as textContent, never as markup.

/**
 * The page's element of this id, which the build's templates write: without it the page is broken.
 * @param {string} id
 * @returns {HTMLElement}
 */
export function byId(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the page has no #${id}`);
  return node;
}

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

/** Copy `text`, saying so on `target` for two seconds; a refused clipboard shows the text to copy by hand.
 * @param {string} text @param {HTMLElement} target */
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

/** Save `text` as a file named `name` (a download the browser asks about or just does).
 * @param {string} name @param {string} type its MIME type @param {string} text */
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

/** "1 paper", "2 papers": a count with its noun in the number the count takes.
 * @param {number} count @param {string} one @param {string} [many] */
export function counted(count, one, many = `${one}s`) {
  return `${count} ${count === 1 ? one : many}`;
}
