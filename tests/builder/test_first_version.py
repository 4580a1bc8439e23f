"""Issue 12, item 2: a paper's year is its first version's, not its latest revision's."""

import pytest

from builder.models import first_version_date
from builder.stages.fetch.sources import Mirror
from builder.writers.papers import paper_record


@pytest.mark.parametrize(
    ("arxiv_id", "published", "expected"),
    [
        ("1706.03762", "", "2017-06"),  # a v7 mirror copy: no v1 date, the id still says June 2017
        ("1810.04805", "", "2018-10"),
        ("2005.11401", "2020-05-22T17:21:56Z", "2020-05-22"),  # arXiv's own v1 date wins
        ("2305.13245v3", "", "2023-05"),
        ("hep-th/9901001", "", "1999-01"),
        ("math.AG/0101001", "", "2001-01"),
        ("not-an-id", "", ""),
        ("1713.00001", "", ""),  # month 13 is no month
    ],
)
def test_first_version_date(arxiv_id, published, expected):
    assert first_version_date(arxiv_id, published) == expected


@pytest.mark.mirror
def test_a_revised_paper_keeps_its_first_year(mirror_dir):
    """The mirror holds v7 of the Transformer paper (revised 2023) without a v1 date."""
    meta = Mirror(mirror_dir).entry("1706.03762").meta  # read as the build reads it
    assert meta.updated.startswith("2023") and not meta.published
    assert meta.year == 2017
    record = paper_record(meta, 0, 1, "text/x.json")
    assert record.year == 2017 and record.first_version == "2017-06"
    assert record.updated.startswith("2023")  # the revision date stays, shown apart


@pytest.mark.mirror
def test_years_over_the_whole_mirror_never_follow_a_revision(mirror_dir):
    """Every paper's year is the one its id encodes (new-style ids cannot lie about it)."""
    mirror, wrong = Mirror(mirror_dir), {}
    paths = sorted((mirror_dir / "meta").glob("*.json"))
    assert len(paths) > 100
    for path in paths:
        meta = mirror.entry(path.stem).meta
        encoded = 2000 + int(path.stem[:2])
        if meta.year != encoded:
            wrong[path.stem] = meta.year
    assert wrong == {}
