// The landing state (site_templates/landing.html, drawn at build time): its examples run in place, as if
// typed and submitted, rather than reloading the page and its search engine. style.css hides the state
// while results are on screen, so it returns by itself when the query is cleared.

/**
 * @param {HTMLFormElement} form the search form
 * @param {HTMLInputElement} input its query box
 */
export function bindLanding(form, input) {
  const landing = document.getElementById("landing");
  if (!landing) return;
  landing.addEventListener("click", (event) => {
    const target = /** @type {HTMLElement} */ (event.target);
    const example = /** @type {HTMLAnchorElement | null} */ (target.closest("a.example"));
    if (!example || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    input.value = example.dataset.query || "";
    form.requestSubmit();
    input.focus();
  });
}
