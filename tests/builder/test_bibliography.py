"""The one BibTeX writer (builder/bibliography.py): arXiv's fields with the version indexed, only
acronyms and names braced in the title, keys unique across the list; and in a real build, the references
file and every paper page hold the same entry, which pybtex reads as a reference manager would."""

import json
import re
from html.parser import HTMLParser

import pytest
from pybtex.database import parse_string
from support import corpus
from support.builds import ADDED_PAPER, SMALL_PAPERS

from builder.bibliography import (
    Reference,
    bibtex_entry,
    braced_title,
    citation_keys,
    csl_item,
    rendered,
)
from readingroom_core.formats.manifest import read_manifest

# (title as the site shows it, a phrase of its abstract, the BibTeX title); from ../shared/arxiv-mirror
TITLES = [
    ("QLoRA: Efficient Finetuning of Quantized LLMs", "We present QLoRA", "{QLoRA}: Efficient Finetuning of Quantized {LLMs}"),
    ("Self-Instruct: Aligning Language Model with Self Generated Instructions", "SELF-INSTRUCT",
     "Self-Instruct: Aligning Language Model with Self Generated Instructions"),
    ("LLaMA: Open and Efficient Foundation Language Models", "We introduce LLaMA, a collection",
     "{LLaMA}: Open and Efficient Foundation Language Models"),
    ("BERT: Pre-training of Deep Bidirectional Transformers", "called BERT, which", "{BERT}: Pre-training of Deep Bidirectional Transformers"),
    ("Adam: A Method for Stochastic Optimization", "We introduce Adam, an algorithm for first-order",
     "{Adam}: A Method for Stochastic Optimization"),
    # A spelled-out acronym in the abstract is no name: "Direct" stays unbraced.
    ("Direct Preference Optimization: Your Language Model is Secretly a Reward Model",
     "we introduce Direct Preference Optimization (DPO), which", "Direct Preference Optimization: Your Language Model is Secretly a Reward Model"),
    ("Scaling GPT-3 to 175B Parameters with T5 & 50% of_it", "", "Scaling {GPT-3} to {175B} Parameters with {T5} \\& 50\\% of\\_it"),
]  # fmt: skip


@pytest.mark.parametrize(("title", "abstract", "braced"), TITLES, ids=[t[0][:30] for t in TITLES])
def test_titles_brace_only_acronyms_and_names(title, abstract, braced):
    assert braced_title(title, abstract) == braced


QLORA = Reference(
    arxiv_id="2305.14314",
    version="v1",
    title="QLoRA: Efficient Finetuning of Quantized LLMs",
    authors=("Tim Dettmers", "Artidoro Pagnoni", "Ari Holtzman", "Luke Zettlemoyer"),
    year=2023,
    primary_class="cs.LG",
    abstract="We present QLoRA, an efficient finetuning approach",
)


def test_an_entry_has_arxivs_fields_with_the_version_and_parses():
    entry = parse_string(bibtex_entry(QLORA, "dettmers2023qlora"), "bibtex").entries["dettmers2023qlora"]
    assert entry.type == "misc"
    assert entry.fields["eprint"] == "2305.14314v1" and entry.fields["archivePrefix"] == "arXiv"
    assert entry.fields["primaryClass"] == "cs.LG" and entry.fields["year"] == "2023"
    assert entry.fields["url"] == "https://arxiv.org/abs/2305.14314v1"
    assert entry.fields["title"] == "{QLoRA}: Efficient Finetuning of Quantized {LLMs}"
    assert [str(person) for person in entry.persons["author"]] == [
        "Dettmers, Tim",
        "Pagnoni, Artidoro",
        "Holtzman, Ari",
        "Zettlemoyer, Luke",
    ]
    assert "note" not in entry.fields


def test_keys_are_readable_and_unique_across_the_list():
    twin = Reference(
        arxiv_id="2305.99999", version="v2", title="QLoRA Again", authors=("Tim Dettmers",), year=2023
    )
    assert citation_keys([QLORA, twin, twin]) == [
        "dettmers2023qlora",
        "dettmers2023qlorab",
        "dettmers2023qlorac",
    ]
    accented = Reference(
        arxiv_id="1", version="", title="Ünïcode titles", authors=("Barlas Oğuz",), year=2020
    )
    assert citation_keys([accented]) == ["oguz2020unicode"]


def test_the_csl_item_names_the_version():
    item = csl_item(QLORA, "dettmers2023qlora")
    assert item["number"] == "arXiv:2305.14314v1" and item["URL"] == "https://arxiv.org/abs/2305.14314v1"
    assert item["author"][0] == {"family": "Dettmers", "given": "Tim"} and item["issued"] == {
        "date-parts": [[2023]]
    }
    assert item["type"] == "article" and item["title"] == QLORA.title


class _PaperData(HTMLParser):
    """The paper page's embedded JSON (<script id="paper-data">)."""

    def __init__(self):
        super().__init__()
        self.inside, self.text = False, ""

    def handle_starttag(self, tag, attrs):
        self.inside = tag == "script" and ("id", "paper-data") in attrs

    def handle_data(self, data):
        if self.inside:
            self.text += data


def test_the_built_site_holds_one_entry_per_paper_in_every_place(built_sites):
    site = built_sites.second
    manifest = read_manifest((site / "manifest.json").read_bytes())
    index = (site / "index.html").read_text(encoding="utf-8")
    url = json.loads(re.search(r'id="app-config">(.*?)</script>', index, re.S)[1])["references"]
    papers = json.loads((site / url.removeprefix(manifest.base_url)).read_text(encoding="utf-8"))["papers"]
    listed = (*SMALL_PAPERS, ADDED_PAPER)
    assert [p["arxiv_id"] for p in papers] == list(listed)  # reading-list order, every paper
    parsed = parse_string("\n\n".join(p["bibtex"] for p in papers), "bibtex")  # one file: keys unique
    assert list(parsed.entries) == [p["key"] for p in papers]
    topics = {topic.arxiv_id: topic for topic in corpus.TOPICS}
    for paper in papers:
        page = _PaperData()
        page.feed((site / "papers" / paper["arxiv_id"] / "index.html").read_text(encoding="utf-8"))
        embedded = json.loads(page.text)["reference"]
        assert embedded == {k: paper[k] for k in ("key", "bibtex", "csl")}  # the page's entry is the file's
        fields = parsed.entries[paper["key"]].fields
        version = f"v{topics[paper['arxiv_id']].versions}"
        assert fields["eprint"] == paper["arxiv_id"] + version
        assert fields["url"] == f"https://arxiv.org/abs/{paper['arxiv_id']}{version}"
        assert fields["primaryClass"] == topics[paper["arxiv_id"]].categories[0]
        assert paper["csl"]["number"] == f"arXiv:{paper['arxiv_id']}{version}"


def test_rendered_gives_each_paper_its_key_entry_and_item():
    out = rendered([QLORA])
    assert set(out) == {"2305.14314"} and out["2305.14314"]["key"] == "dettmers2023qlora"
    assert out["2305.14314"]["bibtex"] == bibtex_entry(QLORA, "dettmers2023qlora")
