"""The postings writer's files: the same postings always give the same bytes, and the directory names
its format, which the core's reader checks."""

import json

import pytest
from support.passages import CORPUS

from builder.writers.postings import TermLayout
from readingroom_core.bm25 import build_postings
from readingroom_core.formats.postings import read_term_directory
from readingroom_core.formats.versioned import FORMAT_VERSION


def test_the_ranged_files_are_deterministic_and_compact():
    first, second = TermLayout(build_postings(CORPUS)), TermLayout(build_postings(list(CORPUS)))
    made = ("terms_bytes", "pages_bytes", "forward_bytes", "forward_index_bytes")
    assert [getattr(first, name) for name in made] == [getattr(second, name) for name in made]
    paths = ("data/terms.json", "data/pages.bin", "data/forward.bin", "data/forward-index.bin")
    directory = first.directory_bytes(*paths)
    assert directory == second.directory_bytes(*paths)
    assert b" " not in directory and b"\n" not in directory


def test_the_directory_reader_refuses_an_unknown_format():
    data = json.loads(TermLayout(build_postings(CORPUS)).directory_bytes("t", "p", "f", "i"))
    with pytest.raises(ValueError, match="format"):
        read_term_directory(json.dumps({**data, "v": FORMAT_VERSION + 1}))
