// The core's folding rule (readingroom_core/analysis.py's `fold`) in the page, for filters that run
// without the core: the build hands over the core's own table (builder/site/folding.py), so "oguz"
// finds Oğuz here as `author:oguz` does in search; tests/browser/test_corpus_filter_browser.py holds the two to
// the same result.

/** @typedef {{[char: string]: string}} FoldTable character -> its folded spelling */

/** `text` folded by `table`, then lowercased (the core lowercases ASCII through its table).
 * @param {FoldTable} table @param {string} text */
export function foldWith(table, text) {
  let folded = "";
  for (const char of text) folded += table[char] ?? char;
  return folded.toLowerCase();
}

/** The table the page embeds as JSON in the element `id`, or an empty one (nothing folded).
 * @param {string} id @returns {FoldTable} */
export function pageFoldTable(id) {
  const source = document.getElementById(id);
  return source ? JSON.parse(String(source.textContent)) : {};
}
