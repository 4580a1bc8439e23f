"""Text entering the core from the page or a provider is always encodable: a lone surrogate (JSON's
`\\ud800` escape, as a broken stream may carry) becomes U+FFFD where it arrives, so the next turn, which
hashes, tokenizes and sends that text again, cannot fail on it."""

import hashlib
import json

import pytest

from readingroom_core import answers
from readingroom_core.wellformed import loads, well_formed

# (hostile text as JSON would decode it, what the core keeps)
CASES = [
    ("\ud800", "\ufffd"),  # a lone high surrogate
    ("\udfff", "\ufffd"),  # a lone low surrogate
    ("answer \ud800 goes on", "answer \ufffd goes on"),
    ("\udc00\ud800", "\ufffd\ufffd"),  # a pair in the wrong order is two lone ones
    ("\ud83d\ude00", "\U0001f600"),  # a pair split by an escape joins into its character
    ("ends in \ud83d", "ends in \ufffd"),  # a pair cut at the end of a delta
    ("plain é ✓ \U0001f600", "plain é ✓ \U0001f600"),  # well-formed text is kept as it is
]


@pytest.mark.parametrize(("text", "kept"), CASES)
def test_every_string_is_made_encodable(text, kept):
    assert well_formed(text) == kept
    kept.encode("utf-8")


@pytest.mark.parametrize(("text", "kept"), CASES)
def test_a_request_from_the_page_decodes_to_encodable_text(text, kept):
    turn = {"question": f"dense retrieval {text}", "answer": f"it says {text}"}
    sent = json.dumps({"question": "what does it say?", "history": [turn]})
    assert "\\u" in sent or text == kept  # the surrogate crosses as an escape, as a browser sends it
    request = loads(sent)
    assert request["history"] == [{"question": f"dense retrieval {kept}", "answer": f"it says {kept}"}]
    # What the next turn does with the previous one: build its retrieval query and hash it.
    query = answers.retrieval_text(request)
    assert kept in query
    hashlib.sha256(query.encode("utf-8")).hexdigest()
    verdict = answers.verify(request["history"][0]["answer"], {"sources": [], "pages": {}})
    json.dumps(verdict, ensure_ascii=False).encode("utf-8")


def test_keys_and_nested_strings_are_made_encodable_too():
    assert loads('{"\\ud800": ["\\udfff", {"x": "\\ud800"}], "n": 1}') == {
        "\ufffd": ["\ufffd", {"x": "\ufffd"}],
        "n": 1,
    }


def test_plain_json_decodes_as_json_loads_does():
    text = '{"query": "dense retrieval", "k": 10, "filters": {"tags": ["a"]}, "x": null}'
    assert loads(text) == json.loads(text)
    assert loads(text.encode()) == json.loads(text)
