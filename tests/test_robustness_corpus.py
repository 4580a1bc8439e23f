"""Hostile corpus files and base_url values: one clear error naming the file and the fix, never a traceback."""

import pytest

from builder.config import CorpusError, check_base_url, parse_corpus

SOURCE = "corpus/x.toml"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "paper = [1, 2]\n",
            "'paper' must be a list of [[paper]] tables, each with id = \"…\"; found a list of int",
        ),
        ('paper = "2005.11401"\n', "found a str"),
        ('[paper]\nid = "2005.11401"\n', "[paper] must be written [[paper]] (double brackets)"),
        ("site = 5\n", "'site' must be a table"),
        ('[site]\ntitle = ["a"]\n', "[site] title must be a string in quotes"),
        ("[[paper]]\nid = 2005.11401\n", "must be a string in quotes"),
        ('[[paper]]\nid = "2005.11401"\nnote = 3\n', "note must be a string"),
    ],
)
def test_wrong_shapes_are_named(text, message):
    with pytest.raises(CorpusError) as caught:
        parse_corpus(text, SOURCE)
    assert message in str(caught.value)
    assert str(caught.value).startswith(SOURCE)


@pytest.mark.parametrize(
    "base_url",
    [
        "//other.host/",
        "/../../",
        "/a/../",
        "/./",
        "https://other.host/",
        "/a b/",
        "/a?x=1/",
        "/a#b/",
        "relative/",
        "/no-slash",
        "/a//b/",
        "/a\\b/",
        "/%2e%2E/",
        "/a/%2e/",
    ],
)
def test_base_url_must_be_a_path_on_the_own_host(base_url):
    with pytest.raises(CorpusError, match="must be an absolute path on the site's own host"):
        parse_corpus(f'[site]\nbase_url = "{base_url}"\n'.replace("\\", "\\\\"), SOURCE)


@pytest.mark.parametrize("base_url", ["/", "/my-list/", "/a/b-c_d.e~f/", "/reading%20room/"])
def test_ordinary_base_urls_pass(base_url):
    check_base_url(base_url)
    assert parse_corpus(f'[site]\nbase_url = "{base_url}"\n', SOURCE).settings.base_url == base_url
