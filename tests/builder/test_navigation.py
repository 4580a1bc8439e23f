"""Navigational queries: a query naming a paper (id, title, "Author et al. Year", short name) puts that
paper's opening passage first; content questions name no paper; author filters ignore case and accents."""

import json
from pathlib import Path

import pytest
from support.builds import MIRROR_PAPERS

from builder.cli import main
from builder.paths import DEV_QUESTIONS
from builder.site.manifest import read_manifest
from builder.stages.fetch.sources import meta_from_mirror
from builder.writers.papers import paper_record
from readingroom_core.filters import Filters, PaperKeys, normalized
from readingroom_core.formats.papers import PaperRecord
from readingroom_core.navigation import PaperFinder, short_names
from readingroom_core.ranges import folder_reader

DATA = Path(__file__).parents[1] / "data"
NAVIGATIONAL = DATA / "questions-navigational.jsonl"
CONTENT_SETS = [DEV_QUESTIONS, *(DATA / f"questions-{name}.jsonl" for name in ("extra", "tune", "report"))]


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def record(arxiv_id, title, authors=(), year=None, abstract=""):
    return PaperRecord(
        id=arxiv_id,
        title=title,
        first_chunk=0,
        chunk_count=1,
        authors=tuple(authors),
        year=year,
        abstract=abstract,
        short_names=short_names(title, abstract),
    )


PAPERS = [
    record("hep-th/9901001", "Strings on a Lattice", ["Jürgen Müller", "Ana de Jong"], 1999),
    record(
        "2106.09685", "LoRA: Low-Rank Adaptation of Large Language Models", ["Edward Hu", "Yelong Shen"], 2021
    ),
    record("1810.04805", "BERT: Pre-training of Deep Bidirectional Transformers", ["Jacob Devlin"], 2018),
    record("2301.10226", "A Watermark for Large Language Models", ["John Kirchenbauer"], 2023),
    record(
        "2212.03533", "Text Embeddings by Weakly-Supervised Contrastive Pre-training", ["Liang Wang"], 2022
    ),
    record(
        "2212.10560",
        "SELF-INSTRUCT: Aligning Language Model with Self Generated Instructions",
        ["Yizhong Wang"],
        2022,
    ),
    record(
        "2204.07705", "Generalization via Declarative Instructions on 1600+ NLP Tasks", ["Yizhong Wang"], 2022
    ),
    record(
        "2212.10496",
        "Precise Zero-Shot Dense Retrieval without Relevance Labels",
        ["Luyu Gao"],
        2022,
        "Instead, we propose to pivot through Hypothetical Document Embeddings (HyDE). Large language models "
        "(LLMs) are widely used.",
    ),
]
FINDER = PaperFinder(PAPERS)


def named(query):
    found = FINDER.find(query)
    return PAPERS[found.paper].id if found else None


@pytest.mark.parametrize(
    "query",
    [
        "2106.09685",
        "2106.09685v2",
        "arXiv:2106.09685",
        "https://arxiv.org/abs/2106.09685v1",
        "https://arxiv.org/pdf/2106.09685.pdf",
        "see arxiv.org/abs/2106.09685 please",
    ],
)
def test_new_style_ids_in_every_written_form(query):
    assert named(query) == "2106.09685"


@pytest.mark.parametrize(
    "query",
    ["hep-th/9901001", "arXiv:hep-th/9901001v2", "https://arxiv.org/abs/hep-th/9901001", "HEP-TH/9901001"],
)
def test_old_style_ids(query):
    assert named(query) == "hep-th/9901001"


def test_an_id_outside_the_list_or_a_longer_number_names_nothing():
    assert named("2106.09686") is None
    assert named("12106.09685") is None and named("2106.096851") is None


@pytest.mark.parametrize(
    ("query", "paper"),
    [
        ("Hu et al. 2021", "2106.09685"),
        ("(Hu et al., 2021)", "2106.09685"),
        ("Devlin et al. 2019", "1810.04805"),  # a conference year one after the arXiv year
        ("Muller 1999", "hep-th/9901001"),  # accents aside
        ("müller and de jong 1999", "hep-th/9901001"),
        ("de Jong 1999", "hep-th/9901001"),  # a second author, bare "Name Year" form
        ("Liang Wang 2022", "2212.03533"),
        ("Devlinn et al. 2018", "1810.04805"),  # one typo
    ],
)
def test_author_and_year(query, paper):
    assert named(query) == paper


def test_author_year_that_is_ambiguous_or_not_a_first_author_names_nothing():
    assert named("Wang 2022") is None  # three papers
    assert named("de Jong et al. 1999") is None  # "et al." names the first author
    assert named("Shen et al. 2020") is None
    assert named("language models 2023") is None


@pytest.mark.parametrize(
    ("query", "paper"),
    [
        ("LoRA", "2106.09685"),
        ("lora", "2106.09685"),
        ("the BERT paper", "1810.04805"),
        ("HyDE", "2212.10496"),
        ("self instruct", "2212.10560"),
        ("BERT 2018", "1810.04805"),
    ],
)
def test_short_names(query, paper):
    assert named(query) == paper


def test_short_names_are_what_a_title_or_abstract_introduces():
    assert PAPERS[1].short_names == ("LoRA",)
    assert PAPERS[7].short_names == ("HyDE",)  # not "LLMs": background, a plural
    assert short_names("DistilBERT, a distilled version of BERT", "") == ("DistilBERT",)
    assert short_names("Batch Normalization: Accelerating Deep Network Training", "") == ()
    assert short_names("Train Short, Test Long: Attention with Linear Biases", "") == ()
    assert short_names("X", "We introduce a new language representation model called BERT.") == ("BERT",)
    assert short_names("X", "We propose Low-Rank Adaptation, or LoRA, which freezes weights.") == ("LoRA",)


@pytest.mark.parametrize(
    ("query", "paper"),
    [
        ('"LoRA: Low-Rank Adaptation of Large Language Models"', "2106.09685"),
        ("low-rank adaptation of large language models", "2106.09685"),
        ("Precise Zero-Shot Dense Retrieval", "2212.10496"),
        ("a watermark for large langauge models", "2301.10226"),
        ("\u201cText Embeddings by Weakly-Supervised Contrastive Pre-training\u201d", "2212.03533"),
    ],
)
def test_titles_whole_in_part_and_misspelt(query, paper):
    assert named(query) == paper


@pytest.mark.parametrize(
    "query",
    [
        "large language models",
        "lora rank",
        "dense retrieval",
        "how does lora reduce trainable parameters",
        "",
        "purple elephant banana smoothie",
    ],
)
def test_topics_and_questions_name_no_paper(query):
    assert named(query) is None


def test_author_filters_ignore_case_and_accents():
    keys = PaperKeys.of(PAPERS[0])
    for typed in ("muller", "MÜLLER", "Jürgen", "jurgen muller"):
        assert keys.passes(normalized(Filters(authors=(typed,))))
    assert not keys.passes(normalized(Filters(authors=("mueller",))))


# --- the navigational set over the real mirror ----------------------------------------------------


@pytest.fixture(scope="module")
def mirror_finder(mirror_dir) -> tuple[PaperFinder, list[PaperRecord]]:
    """The finder over the mirror's 112 papers, with the records the build writes (short names included)."""
    records = []
    for path in sorted((mirror_dir / "meta").glob("*.json")):
        meta = meta_from_mirror(json.loads(path.read_text()), path.stem, str(path))
        records.append(paper_record(meta, len(records), 1, ""))
    return PaperFinder(records), records


@pytest.mark.mirror
def test_the_navigational_set_names_its_papers(mirror_finder):
    finder, records = mirror_finder
    questions = rows(NAVIGATIONAL)
    assert len(questions) >= 50 and len({row["form"] for row in questions}) >= 6
    misses = []
    for row in questions:
        found = finder.find(row["query"])
        if found is None or records[found.paper].id != row["relevant"][0]["arxiv_id"]:
            misses.append(row["query"])
    assert len(misses) <= 0.05 * len(questions), misses


@pytest.mark.mirror
@pytest.mark.parametrize("path", CONTENT_SETS, ids=lambda path: path.name)
def test_content_questions_name_no_paper(mirror_finder, path):
    finder, records = mirror_finder
    if not path.exists():
        pytest.skip(f"{path} is not present")
    assert [row["id"] for row in rows(path) if finder.find(row["query"])] == []


@pytest.mark.mirror
def test_the_engine_puts_the_named_paper_first_with_its_opening(mirror_site, capsys):
    """The set's queries about the four papers of the mirror site, through `query --json` (hybrid)."""
    papers = {
        paper["id"]: paper
        for paper in json.loads(folder_reader(mirror_site)(read_manifest(mirror_site).files.papers))["papers"]
    }
    asked = [row for row in rows(NAVIGATIONAL) if row["relevant"][0]["arxiv_id"] in MIRROR_PAPERS]
    assert len(asked) >= 4
    for row in asked:
        capsys.readouterr()
        assert main(["query", row["query"], "--site", str(mirror_site), "--json"]) == 0
        hits = json.loads(capsys.readouterr().out)
        first_chunk = papers[row["relevant"][0]["arxiv_id"]]["chunks"][0]
        assert hits[0]["doc_id"] == first_chunk, row["query"]
    # a filter that rules the named paper out wins
    capsys.readouterr()
    assert main(["query", "GQA year:..2020", "--site", str(mirror_site), "--json"]) == 0
    assert all(hit["arxiv_id"] != "2305.13245" for hit in json.loads(capsys.readouterr().out))
