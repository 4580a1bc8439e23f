// The corpus page's "take it away" line: the whole list and the visitor's own list (my_list.js) as
// BibTeX or CSL-JSON, from the site's references file; the own list with its count and a way to empty it.

import { button, element } from "./dom.js";
import { clearMyList, myList, onListChange } from "./my_list.js";
import { exportLine } from "./references.js";

const place = document.getElementById("list-exports");
if (place) {
  const url = place.dataset.references || "";
  const whole = exportLine({ url, what: `the whole list (${place.dataset.papers} papers)`, name: "reading-list", ids: () => null });
  const mine = element("span", "my-list");
  const drawMine = () => {
    const count = myList().length;
    if (!count) {
      mine.replaceChildren("Your list is empty: “Add to my list” on a result or a paper page collects papers here, in this browser.");
      return;
    }
    const clear = button("Clear my list", () => clearMyList(), "clear-my-list");
    const what = `your list (${count} paper${count === 1 ? "" : "s"})`;
    mine.replaceChildren(exportLine({ url, what, name: "my-list", ids: myList, className: "export mine" }), " ", clear);
  };
  drawMine();
  onListChange(drawMine);
  place.replaceChildren(whole, element("br"), mine);
  place.hidden = false;
}
