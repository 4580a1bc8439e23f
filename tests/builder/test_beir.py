import argparse
import json

import pytest

from builder.commands.beir import add_beir_command, run_beir_command
from builder.evaluation.beir import (
    EvalSettings,
    evaluate_dataset,
    load_dataset,
    read_qrels,
    search_options,
)
from readingroom_core.querysyntax import free_text

DOCS = {
    "d01": ("Photosynthesis", "Plants convert sunlight, water and carbon dioxide into glucose and oxygen."),
    "d02": (
        "Mitochondria",
        "Mitochondria produce most of the chemical energy that powers a cell's reactions.",
    ),
    "d03": (
        "Vaccines",
        "Vaccines train the immune system to recognise a pathogen without causing the disease.",
    ),
    "d04": ("Antibiotic resistance", "Overuse of antibiotics lets resistant bacteria survive and spread."),
    "d05": ("Plate tectonics", "Earthquakes happen where tectonic plates grind against each other."),
    "d06": ("Volcanoes", "Magma rising through the crust erupts as lava, ash and volcanic gas."),
    "d07": ("Coral reefs", "Warmer oceans bleach coral reefs by driving out the algae that feed them."),
    "d08": ("Sea turtles", "Female sea turtles return to the beach where they hatched to lay their eggs."),
    "d09": ("Bees", "Honeybees pollinate crops and communicate the location of flowers by dancing."),
    "d10": ("Sleep", "During deep sleep the brain consolidates memories formed during the day."),
    "d11": ("Exercise", "Regular aerobic exercise lowers blood pressure and improves heart health."),
    "d12": ("Caffeine", "Caffeine blocks adenosine receptors, which makes people feel less tired."),
    "d13": ("Inflation", "Central banks raise interest rates to slow down rising consumer prices."),
    "d14": ("Unemployment", "Recessions push up unemployment as firms cut jobs to reduce costs."),
    "d15": ("Trade", "Tariffs make imported goods more expensive and can provoke retaliation."),
    "d16": ("Black holes", "A black hole's gravity is so strong that not even light can escape it."),
    "d17": ("Exoplanets", "Astronomers detect exoplanets by the dimming of a star as a planet passes."),
    "d18": ("Moon", "The Moon's gravity raises the ocean tides on Earth twice a day."),
    "d19": ("Compilers", "A compiler translates source code into machine instructions before it runs."),
    "d20": (
        "School uniforms",
        "School uniforms should be mandatory because they reduce bullying over clothes.",
    ),
    "d21": ("Against uniforms", "Mandatory uniforms stifle self-expression and do little to stop bullying."),
    "d22": ("Encryption", "Public key encryption lets strangers exchange secrets over an open network."),
    "d23": ("Databases", "An index lets a database find rows without scanning the whole table."),
    "d24": ("Bread", "Yeast ferments sugars in dough, releasing carbon dioxide that makes bread rise."),
    "d25": ("Coffee brewing", "Espresso forces hot water through finely ground coffee at high pressure."),
    "d26": ("Football", "The goalkeeper saved a penalty in extra time and the match ended in a draw."),
    "d27": ("Chess", "Opening principles in chess favour controlling the centre and developing pieces."),
    "d28": ("Painting", "Impressionist painters captured changing light with quick visible brushstrokes."),
    "d29": ("Rivers", "Rivers carve valleys over millions of years by eroding rock and carrying sediment."),
    "d30": (
        "Glaciers",
        "Glaciers retreat as rising temperatures melt more ice each summer than falls as snow.",
    ),
}
QUERIES = {
    # words of d07 exactly: BM25 must put it first
    "q-exact": "Warmer oceans bleach coral reefs by driving out the algae that feed them.",
    # d12 in other words (no shared content word): only the dense retriever can find it
    "q-para": "why does a cup of coffee keep you awake",
    "q-quake": "what causes earthquakes",
    "q-grades": "how do plants and cells get energy",
    # ArguAna style: the query is doc d20 itself; the relevant doc is its counter-argument
    "d20": "School uniforms should be mandatory because they reduce bullying over clothes.",
    "q-syntax": 'tides "caused by the moon" year:2020',
}
QRELS = {
    "q-exact": {"d07": 1},
    "q-para": {"d12": 1},
    "q-quake": {"d05": 1},
    "q-grades": {"d01": 2, "d02": 2, "d11": 1},
    "d20": {"d21": 1},
    "q-syntax": {"d18": 1},
}


def write_dataset(folder):
    folder.mkdir()
    (folder / "qrels").mkdir()
    with (folder / "corpus.jsonl").open("w") as handle:
        for doc_id, (title, text) in DOCS.items():
            handle.write(json.dumps({"_id": doc_id, "title": title, "text": text, "metadata": {}}) + "\n")
    with (folder / "queries.jsonl").open("w") as handle:
        for query_id, text in {**QUERIES, "q-unjudged": "bread"}.items():
            handle.write(json.dumps({"_id": query_id, "text": text, "metadata": {}}) + "\n")
    rows = ["query-id\tcorpus-id\tscore"] + [
        f"{query_id}\t{doc_id}\t{grade}"
        for query_id, judged in QRELS.items()
        for doc_id, grade in judged.items()
    ]
    (folder / "qrels" / "test.tsv").write_bytes(("\r\n".join(rows) + "\r\n").encode())
    return folder


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory):
    return write_dataset(tmp_path_factory.mktemp("beir") / "tiny")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def runs(dataset_dir, cache_dir, model_dir):
    """Every mode's ranked ids, with the sentence-transformers query encoder (no ONNX export needed)."""
    dataset = load_dataset(dataset_dir)
    return evaluate_dataset(dataset, EvalSettings(query_encoder="model"), cache_dir, model_dir).runs


def parse(argv):
    parser = argparse.ArgumentParser()
    add_beir_command(parser.add_subparsers(dest="command"))
    return parser.parse_args(["eval-beir", *argv])


def test_loader_reads_crlf_qrels_and_keeps_only_judged_queries(dataset_dir):
    dataset = load_dataset(dataset_dir)
    assert dataset.name == "tiny"
    assert set(dataset.queries) == set(QRELS)  # q-unjudged has no qrels
    assert dataset.qrels["q-grades"] == {"d01": 2, "d02": 2, "d11": 1}
    assert dataset.doc_texts[0] == "Photosynthesis " + DOCS["d01"][1]


def test_qrels_with_a_broken_row_name_the_line(tmp_path):
    path = tmp_path / "test.tsv"
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2 d2 1\n")
    with pytest.raises(ValueError, match=r"test.tsv:3"):
        read_qrels(path)


def test_missing_files_are_reported(tmp_path, capsys):
    assert run_beir_command(parse(["--data", str(tmp_path), "--json"])) == 2
    assert "corpus.jsonl" in capsys.readouterr().err


def test_exact_text_ranks_first_in_bm25(runs):
    assert runs["bm25"]["q-exact"][0] == "d07"
    assert runs["hybrid"]["q-exact"][0] == "d07"


def test_paraphrase_is_found_by_dense_not_bm25(runs):
    assert runs["dense"]["q-para"][0] == "d12"
    assert "d12" not in runs["bm25"]["q-para"]
    assert "d12" in runs["hybrid"]["q-para"][:3]


def test_query_syntax_is_read_as_plain_words(runs):
    assert free_text('tides "caused by the moon" year:2020') == "tides  caused by the moon  year 2020"
    assert runs["bm25"]["q-syntax"][0] == "d18"


def test_a_query_never_retrieves_its_own_doc(runs):
    for mode in ("bm25", "dense", "hybrid"):
        assert "d20" not in runs[mode]["d20"]
        assert runs[mode]["d20"][0] == "d21"


def test_command_prints_scores_per_mode(dataset_dir, cache_dir, capsys):
    args = parse(
        ["--data", str(dataset_dir), "--cache", str(cache_dir), "--query-encoder", "model", "--json"]
    )
    assert run_beir_command(args) == 0
    scores = json.loads(capsys.readouterr().out)
    assert set(scores) == {"bm25", "dense", "hybrid"}
    for mode in scores.values():
        assert set(mode) == {"ndcg@10", "recall@100"}
        assert all(0 <= value <= 1 for value in mode.values())
    assert scores["hybrid"]["recall@100"] == 1.0  # 30 docs: every relevant doc is somewhere in the top 100
    assert scores["hybrid"]["ndcg@10"] > 0.7
    assert scores["bm25"]["recall@100"] < 1.0  # q-para shares no word with its doc


def test_keeping_identical_ids_puts_the_query_doc_first(dataset_dir, cache_dir, model_dir):
    dataset = load_dataset(dataset_dir)
    settings = EvalSettings(query_encoder="model", ignore_identical_ids=False)
    kept = evaluate_dataset(dataset, settings, cache_dir, model_dir).runs
    assert kept["bm25"]["d20"][0] == "d20"


def test_options_turn_diversity_caps_off_and_keep_room_for_the_dropped_self_hit():
    options = search_options(EvalSettings(candidates=50, fusion="rrf"), "hybrid")
    assert (options.per_paper, options.per_section, options.per_page) == (0, 0, 0)
    assert options.k == 101 and options.candidates == 101  # Recall@100 needs at least 100 per retriever
    assert options.fusion == "rrf"
    assert search_options(EvalSettings(ignore_identical_ids=False), "bm25").k == 100
