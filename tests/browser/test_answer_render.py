"""answer.js under Node, as the render stage ships it (with markdown-it): hostile model output stays inert.

The browser tests drive whole answers; these feed the renderer the shapes an attacker would try, one by
one: raw HTML, javascript: and data: links, images, a forged citation placeholder, markup inside a
citation's quote, a citation in code, table alignment (which markdown-it writes as a style attribute
the page's CSP would refuse).
"""

import pytest
from support.page_modules import node_script

RENDER = """
import { renderPlain, renderVerified } from "./answer.js";
const cases = JSON.parse(process.argv[2]);
const out = cases.map(({ text, citations, uncited }) =>
  citations ? renderVerified(text, citations, uncited || [], (c) => (c.source ? `turn-1-s${c.source}` : null))
            : renderPlain(text));
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def render(tmp_path_factory):
    run = node_script(tmp_path_factory.mktemp("page-modules"), "render.mjs", RENDER)
    return lambda *cases: run(list(cases))


def cite(text: str, raw: str, **fields) -> dict:
    start = text.index(raw)
    return {
        "start": start,
        "end": start + len(raw),
        "arxiv_id": "1904.08375",
        "page": 2,
        "quote": "q",
        **fields,
    }


def test_raw_html_images_and_script_links_are_inert(render):
    (html,) = render(
        {
            "text": '<img src=x onerror="alert(1)"> <script>alert(2)</script>\n\n'
            "[a](javascript:alert(3)) [b](data:text/html,x) ![c](https://evil.example/t.png) "
            "[d](https://arxiv.org/abs/1904.08375)"
        }
    )
    assert "<img" not in html and "<script" not in html and "&lt;script&gt;" in html
    assert 'href="javascript' not in html and 'href="data' not in html
    assert 'src="' not in html
    assert '<a href="https://arxiv.org/abs/1904.08375" rel="noopener noreferrer nofollow">d</a>' in html


def test_citations_are_drawn_from_the_verdict_and_escaped(render):
    text = 'Claim one [arXiv:1904.08375 p.2 "a <b>bold</b> quote"]. Claim two [arXiv:2401.99999 p.3 "x"].'
    first = '[arXiv:1904.08375 p.2 "a <b>bold</b> quote"]'
    second = '[arXiv:2401.99999 p.3 "x"]'
    citations = [
        cite(
            text,
            first,
            quote="a <b>bold</b> quote",
            verified=True,
            status="verified",
            reason="on p.2",
            source=1,
            found_page=2,
        ),
        cite(
            text,
            second,
            arxiv_id="2401.99999",
            page=3,
            quote="x",
            verified=False,
            status="invented",
            reason="not one of the sources <i>",
        ),
    ]
    (html,) = render({"text": text, "citations": citations})
    assert '<a class="cite-source" href="#turn-1-s1"' in html
    assert 'href="https://arxiv.org/pdf/1904.08375#page=2"' in html
    assert "<b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html and "<i>" not in html
    unverified = html[html.index('class="cite unverified') :]
    assert "<a" not in unverified.split("</span>]</span>")[0]  # an unverified citation links nowhere
    assert "✗ not verified: not one of the sources &lt;i&gt;" in unverified


def test_the_model_cannot_forge_a_placeholder_and_code_keeps_citations_as_written(render):
    text = 'Forged \ue0000\ue001 here. In code: `[arXiv:1904.08375 p.2 "q q q"]` end.'
    raw = '[arXiv:1904.08375 p.2 "q q q"]'
    citations = [cite(text, raw, verified=True, status="verified", reason="ok", source=1)]
    (html,) = render({"text": text, "citations": citations})
    assert html.count('class="cite') == 0  # the only real citation sits in code: shown as written
    escaped = raw.replace('"', "&quot;")
    assert f"<code>{escaped}</code>" in html
    assert "\ufffd" in html  # the forged placeholder became a replacement character


def test_table_alignment_becomes_a_class_not_a_style(render):
    (html,) = render({"text": "| a | b |\n|:-:|--:|\n| 1 | 2 |\n"})
    assert "<table>" in html and "style=" not in html
    assert 'class="align-center"' in html and 'class="align-right"' in html


def test_uncited_sentences_are_marked(render):
    text = 'A cited claim [arXiv:1904.08375 p.2 "q q q"]. An uncited claim about things.'
    raw = '[arXiv:1904.08375 p.2 "q q q"]'
    uncited_text = "An uncited claim about things."
    start = text.index(uncited_text)
    (html,) = render(
        {
            "text": text,
            "citations": [cite(text, raw, verified=True, status="verified", reason="ok", source=1)],
            "uncited": [{"text": uncited_text, "start": start, "end": start + len(uncited_text)}],
        }
    )
    assert html.index("An uncited claim about things.") < html.index('class="uncited-mark"')


def test_verdict_marks_the_model_writes_are_not_drawn_as_verdicts(render):
    text = (
        'Forged [arXiv:2401.99999 p.3 "x"] \u2713 verified. Also \u2705 and \u2714\ufe0f verified, '
        '<span class="cite verified">[arXiv:1904.08375 p.2] \u2713 verified</span>.'
    )
    raw = '[arXiv:2401.99999 p.3 "x"]'
    unverified = cite(text, raw, arxiv_id="2401.99999", verified=False, status="invented", reason="invented")
    plain, checked = render({"text": text}, {"text": text, "citations": [unverified]})
    for html in (plain, checked):
        assert not any(mark in html for mark in "\u2713\u2705\u2714")  # every ✓ the model wrote is gone
        assert 'class="cite verified' not in html and "&lt;span class=&quot;cite verified" in html
    assert checked.count("\ufffd") == 4 and "\u2717 not verified: invented" in checked


# Marks, placeholders and brackets the model spells as entities, which markdown-it decodes after the
# literal marks are replaced: none may come out as a mark or as a citation.
ENTITY_FORGERIES = [
    "Fact E &#10003; Verified by Reading Room",
    "Fact E &#x2705; Verified by Reading Room",
    "Fact E &check; Verified by Reading Room",
    "Fact E &#x2714;&#xFE0F; verified",
    "Fact E &cross; &#x2717; &#10060; not verified",
    '[Fact E](https://arxiv.org/abs/1904.08375 "&#x2705; verified")',
    "**Bold &#x2713;** and *italic &#x2705;* and a heading below\n\n# &#10003; Verified",
    "| a |\n|---|\n| &#x2705; verified |",
    "&#91;arXiv:1904.08375 p.2 &#x2717; not verified&#93; PDF &#10003; verified&#93;",
    "Forged &#xE000;0&#xE001; and &#57344;0&#57345; and &#xE002;0&#xE001; placeholders",
]
MARKS = "\u2713\u2714\u2705\u2611\u2612\u2717\u2718\u274c\u274e\u2715\u2716\U0001f5f8"


@pytest.mark.parametrize("forged", ENTITY_FORGERIES)
def test_entity_encoded_marks_and_brackets_are_not_drawn(render, forged):
    text = f'A claim [arXiv:2401.99999 p.3 "x"]. {forged}'
    raw = '[arXiv:2401.99999 p.3 "x"]'
    unverified = cite(text, raw, arxiv_id="2401.99999", verified=False, status="invented", reason="invented")
    plain, checked = render({"text": text}, {"text": text, "citations": [unverified]})
    assert not any(mark in plain for mark in MARKS)
    # The one mark on the checked page is the verifier's, drawn for the one citation it found.
    assert [mark for mark in checked if mark in MARKS] == ["\u2717"]
    assert checked.count('class="cite ') == 1 and 'class="uncited' not in checked
    assert "\ue000" not in checked + plain and "\ue001" not in checked + plain
