"""The forward file: per passage, the frequencies of the common terms, so keyword candidates are rescored
exactly with the postings a query left unread.

Two files (written by builder/writers/forward.py with the postings, read by `readers/forward.py`), named
by the postings directory (`formats.postings.TermDirectory`: `forward`, `forward_group`,
`forward_min_df`, `forward_index`):

- the forward file: per document, in doc id order, the frequency of each term in more than F documents
  (varints: the count, then rank gaps and frequencies; a term's rank is its number in the dictionary
  entries, `formats.postings`), G documents to a group, each group deflated (`formats.postings.deflated`);
- the forward index (read whole, once): little-endian uint32 start of each group and the end of the last,
  then each group's first FORWARD_SHA_BYTES bytes of sha256.

A common term ("model" is in 73% of passages) weighs little per passage, but a dozen of them decide many
top-10s on a large list (commit 894cfde, measured with scripts/bm25_depth_study.py, removed in cf98ed9,
last version at 5af4878).
"""

from __future__ import annotations

from readingroom_core.formats.postings import DEFAULT_PREFIX

FORWARD_GROUP = 16  # documents per forward group: the unit a candidate's frequencies are read in
# The forward file holds the terms in more documents: a default read leaves no other term a tail.
FORWARD_MIN_DF = DEFAULT_PREFIX
# Of each forward group's sha256, the forward index holds 64 bits: the index is read whole before the
# first keyword result of a query of several words, so its size is waiting time, and a damaged group still
# fails its check but for one chance in 2**64 (format 8, commit c32b87b).
FORWARD_SHA_BYTES = 8
