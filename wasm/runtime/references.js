// Citations to take away: each paper's BibTeX entry and CSL-JSON item as the build rendered them
// (builder/bibliography.py, in the site's references file), joined into files for one paper, a
// result set, the whole list or the visitor's own list (my_list.js). Nothing is written or fetched
// from anywhere but the site itself.

import { button, copyText, element, saveFile } from "./dom.js";

/** @typedef {{arxiv_id: string, key: string, bibtex: string, csl: object}} Reference */

/** @type {Map<string, Promise<Reference[]>>} */
const loaded = new Map();

/** Every paper's reference in reading-list order, fetched once per page. @param {string} url */
export function loadReferences(url) {
  let references = loaded.get(url);
  if (!references) {
    references = fetch(url).then(async (response) => {
      if (!response.ok) throw new Error(`the references file did not load (HTTP ${response.status})`);
      return /** @type {{papers: Reference[]}} */ (await response.json()).papers;
    });
    references.catch(() => loaded.delete(url)); // a later click tries again
    loaded.set(url, references);
  }
  return references;
}

/** The references of `ids` in the order given (ids the list does not hold are left out).
 * @param {string} url @param {string[] | null} ids null for the whole list @returns {Promise<Reference[]>} */
export async function referencesOf(url, ids) {
  const all = await loadReferences(url);
  if (!ids) return all;
  const byId = new Map(all.map((reference) => [reference.arxiv_id, reference]));
  return [...new Set(ids)].flatMap((id) => byId.get(id) ?? []);
}

/** A .bib file: the entries one blank line apart. @param {Reference[]} references */
export function bibtexFile(references) {
  return references.length ? references.map((r) => r.bibtex).join("\n\n") + "\n" : "";
}

/** A CSL-JSON file: the items as one array. @param {Reference[]} references */
export function cslFile(references) {
  return JSON.stringify(references.map((r) => r.csl), null, 2) + "\n";
}

/** A button that copies one paper's BibTeX entry. @param {string} url @param {string} arxivId */
export function copyBibtexButton(url, arxivId) {
  const copy = button("BibTeX", async () => {
    const [reference] = await referencesOf(url, [arxivId]).catch(() => []);
    await copyText(reference ? reference.bibtex : "BibTeX could not load; reload the page", copy);
  }, "copy-bibtex");
  copy.setAttribute("aria-label", `Copy a BibTeX entry for arXiv:${arxivId}`);
  return copy;
}

/**
 * "Export {what}: BibTeX · CSL-JSON", each a download of the papers `ids()` names when clicked.
 * @param {object} options
 * @param {string} options.url the references file
 * @param {string} options.what what is exported, as the line names it ("these 8 papers")
 * @param {string} options.name the files' name, without extension
 * @param {() => string[] | null} options.ids the papers, in order; null for the whole list
 * @param {string} [options.className]
 */
export function exportLine({ url, what, name, ids, className = "export" }) {
  const line = element("span", className);
  /** @param {string} format @param {string} extension @param {string} type @param {(r: Reference[]) => string} file */
  const saver = (format, extension, type, file) => {
    const save = button(format, async () => {
      try {
        saveFile(`${name}.${extension}`, type, file(await referencesOf(url, ids())));
      } catch (error) {
        save.textContent = /** @type {Error} */ (error).message;
      }
    }, `export-${extension}`);
    save.setAttribute("aria-label", `Download ${what} as ${format}`);
    return save;
  };
  line.append(
    `Export ${what}: `,
    saver("BibTeX", "bib", "application/x-bibtex", bibtexFile),
    " ",
    saver("CSL-JSON", "json", "application/vnd.citationstyles.csl+json", cslFile),
  );
  return line;
}
