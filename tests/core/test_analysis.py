import unicodedata

import pytest

from readingroom_core.analysis import (
    FOLD_TABLE,
    STOP_WORDS,
    analyze,
    bare_id,
    contains_phrase,
    fold,
    stem,
)
from readingroom_core.querysyntax import Query, parse_query

# Word -> stem pairs from the sample vocabulary published with the Snowball English (Porter2) stemmer.
PORTER2_SAMPLES = {
    "consign": "consign",
    "consigned": "consign",
    "consigning": "consign",
    "consignment": "consign",
    "consist": "consist",
    "consisted": "consist",
    "consistency": "consist",
    "consistent": "consist",
    "consistently": "consist",
    "consisting": "consist",
    "consists": "consist",
    "consolation": "consol",
    "consolations": "consol",
    "consolatory": "consolatori",
    "console": "consol",
    "consoled": "consol",
    "consoles": "consol",
    "consolidate": "consolid",
    "consolidated": "consolid",
    "consolidating": "consolid",
    "consoling": "consol",
    "consolingly": "consol",
    "consols": "consol",
    "consonant": "conson",
    "consort": "consort",
    "consorted": "consort",
    "consorting": "consort",
    "conspicuous": "conspicu",
    "conspicuously": "conspicu",
    "conspiracy": "conspiraci",
    "conspirator": "conspir",
    "conspirators": "conspir",
    "conspire": "conspir",
    "conspired": "conspir",
    "conspiring": "conspir",
    "constable": "constabl",
    "constables": "constabl",
    "constance": "constanc",
    "constancy": "constanc",
    "constant": "constant",
    "knack": "knack",
    "knackeries": "knackeri",
    "knacks": "knack",
    "knag": "knag",
    "knave": "knave",
    "knaves": "knave",
    "knavish": "knavish",
    "kneaded": "knead",
    "kneading": "knead",
    "knee": "knee",
    "kneel": "kneel",
    "kneeled": "kneel",
    "kneeling": "kneel",
    "kneels": "kneel",
    "knees": "knee",
    "knell": "knell",
    "knelt": "knelt",
    "knew": "knew",
    "knick": "knick",
    "knif": "knif",
    "knife": "knife",
    "knight": "knight",
    "knightly": "knight",
    "knights": "knight",
    "knit": "knit",
    "knits": "knit",
    "knitted": "knit",
    "knitting": "knit",
    "knives": "knive",
    "knob": "knob",
    "knobs": "knob",
    "knock": "knock",
    "knocked": "knock",
    "knocker": "knocker",
    "knockers": "knocker",
    "knocking": "knock",
    "knocks": "knock",
    "knopp": "knopp",
    "knot": "knot",
    "knots": "knot",
}

# Examples the algorithm's description gives for its special cases.
PORTER2_RULE_EXAMPLES = {
    "ties": "tie",
    "cries": "cri",
    "gas": "gas",
    "gaps": "gap",
    "kiwis": "kiwi",
    "this": "this",
    "cry": "cri",
    "by": "by",
    "say": "say",
    "generously": "generous",
    "skies": "sky",
    "dying": "die",
    "lying": "lie",
    "tying": "tie",
    "idly": "idl",
    "gently": "gentl",
    "ugly": "ugli",
    "early": "earli",
    "only": "onli",
    "singly": "singl",
    "news": "news",
    "bias": "bias",
    "atlas": "atlas",
    "innings": "inning",
    "exceeds": "exceed",
    "hoped": "hope",
    "hopping": "hop",
}


@pytest.mark.parametrize(("word", "expected"), sorted({**PORTER2_SAMPLES, **PORTER2_RULE_EXAMPLES}.items()))
def test_porter2_stems(word, expected):
    assert stem(word) == expected


def test_inflections_of_a_word_share_a_term():
    assert len({analyze(word)[0] for word in ("retrieval", "retrieve", "retrieved", "retrieving")}) == 1
    assert analyze("Networks") == analyze("network")


def test_stop_words_vanish_but_content_words_stay():
    assert analyze("The model is in the state of the art, et al. show") == ["model", "state", "art", "show"]
    assert {"the", "of", "and", "is", "we"} <= STOP_WORDS
    assert "model" not in STOP_WORDS


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("GPT-3", ["gpt3", "gpt"]),
        ("BERT-base", ["bertbas", "bert", "base"]),
        ("state-of-the-art", ["stateoftheart", "state", "art"]),
        ("k-NN", ["knn", "nn"]),
        ("l2 and F1", ["l2", "f1"]),
        ("arXiv:2005.11401", ["arxiv", "2005.11401"]),
        ("2005.11401v2", ["2005.11401v2", "2005.11401"]),
        ("lr 3e-4 at 0.5", ["lr", "3e4", "3e", "0.5"]),
        ("GPT-3.5", ["gpt3.5", "gpt", "3.5"]),
        ("pages 100-110", ["page", "100", "110"]),  # numeric ranges are not glued into 100110
        ("Fig.3 shows it.The end", ["fig", "show", "end"]),
    ],
)
def test_scientific_tokens(text, terms):
    assert analyze(text) == terms


def test_spelling_variants_of_a_compound_meet():
    assert set(analyze("gpt3")) <= set(analyze("GPT-3"))
    assert set(analyze("kNN")) <= set(analyze("k-NN"))
    assert set(analyze("self-attention")) >= set(analyze("self attention"))


@pytest.mark.parametrize(
    ("variant", "plain"),
    [
        ("naïve Schrödinger Erdős", "naive Schrodinger Erdos"),
        ("ÉCOLE Polytechnique Fédérale", "ecole polytechnique federale"),
        ("Straße Ørsted Łukasz", "strasse orsted lukasz"),
        ("ﬁne-tuning", "fine-tuning"),  # ligature from PDF extraction
        ("Kullback–Leibler", "Kullback-Leibler"),  # en dash
        ("β-VAE with α", "beta-VAE with alpha"),
        ("𝐖𝑥 + 𝑏", "Wx + b"),  # math italic/bold letters
    ],
)
def test_accent_and_symbol_folding(variant, plain):
    assert analyze(variant) == analyze(plain)


def test_superscripts_and_unknown_scripts_separate_words():
    assert analyze("Transformer³ model") == analyze("Transformer model")
    assert analyze("abcжdef") == ["abc", "def"]


def test_fold_table_only_covers_characters_stable_across_unicode_versions():
    """Pyodide's newer Unicode must fold text exactly as CPython 3.11 does: every folded character is
    assigned in this (3.11: Unicode 14) table, and decompositions of assigned characters never change."""
    assert unicodedata.unidata_version >= "14.0.0"
    for code, folded in FOLD_TABLE.items():
        assert unicodedata.category(chr(code)) != "Cn", hex(code)
        assert folded.isascii() and (folded.isalnum() or folded == "-"), (hex(code), folded)
    assert fold("Ωmega Ж") == "omegamega Ж"


def test_parse_query_keeps_quoted_phrases():
    query = parse_query('"retrieval augmented generation" for open-domain QA')
    assert query.phrases == [["retriev", "augment", "generat"]]
    assert query.terms == ["retriev", "augment", "generat", "opendomain", "open", "domain", "qa"]


def test_phrases_leave_out_joined_compounds_but_terms_keep_them():
    query = parse_query('"fine-tuning BERT-base" models')
    assert query.phrases == [["fine", "tune", "bert", "base"]]
    assert query.terms == ["finetun", "fine", "tune", "bertbas", "bert", "base", "model"]


def test_bare_id_is_how_filters_and_citations_compare_arxiv_ids():
    assert bare_id(" 2005.11401V2 ") == "2005.11401"
    assert bare_id("hep-th/9901001v3") == bare_id("hep-th/9901001") == "hep-th/9901001"


def test_parse_query_edge_cases():
    assert parse_query("") == Query()
    assert parse_query('"dropout"') == Query(terms=["dropout"], phrases=[])
    assert parse_query('dense "passage retriev').phrases == []  # still typing the phrase
    assert parse_query("\u201cbatch normalization\u201d").phrases == [["batch", "normal"]]
    assert parse_query("model models modeling").terms == ["model"]


@pytest.mark.parametrize(
    "doc",
    [
        "We train retrieval-augmented generation models.",
        "We train retrieval augmented generation models.",
        "Retrieval Augmented Generation (RAG) models",
    ],
)
def test_phrase_matches_hyphenated_and_spaced_spellings(doc):
    (phrase,) = parse_query('"retrieval-augmented generation"').phrases
    assert contains_phrase(doc, phrase)


def test_phrase_spanning_two_compounds():
    (phrase,) = parse_query('"GPT-3 fine-tuning"').phrases
    assert contains_phrase("We study GPT-3 fine-tuning costs.", phrase)
    assert contains_phrase("We study GPT 3 fine tuning costs.", phrase)
    assert not contains_phrase("We study GPT-3 with careful fine-tuning.", phrase)


def test_contains_phrase_needs_order_and_adjacency():
    doc = "We fine-tune retrieval augmented generation models on open-domain QA."
    assert contains_phrase(doc, ["augment", "generat"])
    assert contains_phrase(doc, ["open", "domain", "qa"])
    assert not contains_phrase(doc, ["generat", "retriev"])
    assert not contains_phrase(doc, ["augment", "model"])
