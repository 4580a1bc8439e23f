// The index files queries read by range, fetched whole in the background once semantic search is up: a
// query then waits on no round trip for them. Which files, and when, are decided here; the worker fetches.

// Background downloads wait until no request has run for this long: a visitor's searches keep the line.
export const QUIET_MS = 1000;

/** Resolves once no request is under way and none has ended for QUIET_MS.
 * @param {{requestsUnderWay: number, lastRequestEnded: number}} activity the worker's live counters */
export async function whenQuiet(activity) {
  for (;;) {
    const waited = performance.now() - activity.lastRequestEnded;
    if (!activity.requestsUnderWay && waited >= QUIET_MS) return;
    await new Promise((resolve) => setTimeout(resolve, Math.max(QUIET_MS - waited, 100)));
  }
}

/**
 * The ranged files to fetch whole: in the order `Site.ranged_files` gives (most read first), as many as
 * fit the corpus file's `whole_index_mb`, leaving out those start-up already holds whole. The encoder's
 * word-piece table stays ranged (the core does not list it): it is as large whatever the list, and costs
 * a query only a few ms more.
 * @param {string[]} ranged @param {Set<string>} heldWhole @param {(path: string) => number} wireBytes
 * @param {number} budgetBytes @returns {string[]}
 */
export function filesToReadWhole(ranged, heldWhole, wireBytes, budgetBytes) {
  const files = ranged.filter((path) => !heldWhole.has(path));
  let total = 0;
  const fit = files.findIndex((path) => (total += wireBytes(path)) > budgetBytes);
  return fit === -1 ? files : files.slice(0, fit);
}
