"""ALL-CAPS titles (arXiv metadata taken from some PDFs) become title case with their acronyms kept, once,
in the paper's site record: pages, search results, Ask sources and BibTeX all read the record."""

import json

import pytest

from builder.models import PaperMeta
from builder.titles import title_case
from builder.writers.papers import paper_record

# (title as fetched, a phrase of its abstract, the title the site shows); from ../shared/arxiv-mirror
CASES = [
    ("LORA: LOW-RANK ADAPTATION OF LARGE LANGUAGE MODELS", "We propose Low-Rank Adaptation, or LoRA, which",
     "LoRA: Low-Rank Adaptation of Large Language Models"),
    ("ADAM: A METHOD FOR STOCHASTIC OPTIMIZATION", "We introduce Adam, an algorithm",
     "Adam: A Method for Stochastic Optimization"),
    ("SELF-RAG: LEARNING TO RETRIEVE, GENERATE, AND CRITIQUE THROUGH SELF-REFLECTION",
     "a new framework called Self-Reflective Retrieval-Augmented Generation (SELF-RAG) that",
     "Self-RAG: Learning to Retrieve, Generate, and Critique Through Self-Reflection"),
    ("MACHINE COMPREHENSION USING MATCH-LSTM AND ANSWER POINTER", "we propose an end-to-end neural architecture",
     "Machine Comprehension Using Match-LSTM and Answer Pointer"),
    ("REACT: SYNERGIZING REASONING AND ACTING IN LANGUAGE MODELS", "we explore the use of LLMs ... ReAct",
     "ReAct: Synergizing Reasoning and Acting in Language Models"),
    ("NEFTUNE: NOISY EMBEDDINGS IMPROVE INSTRUCTION FINETUNING", "NEFTune adds noise to the embedding vectors",
     "NEFTune: Noisy Embeddings Improve Instruction Finetuning"),
    ("RAPTOR: RECURSIVE ABSTRACTIVE PROCESSING FOR TREE-ORGANIZED RETRIEVAL", "Our model, RAPTOR, ",
     "RAPTOR: Recursive Abstractive Processing for Tree-Organized Retrieval"),
    ("TRAIN SHORT, TEST LONG: ATTENTION WITH LINEAR BIASES ENABLES INPUT LENGTH EXTRAPOLATION", "",
     "Train Short, Test Long: Attention with Linear Biases Enables Input Length Extrapolation"),
    ("SCALING GPT-3 TO 175B PARAMETERS WITH RLHF", "", "Scaling GPT-3 to 175B Parameters with RLHF"),
]  # fmt: skip


@pytest.mark.parametrize(("fetched", "abstract", "shown"), CASES, ids=[c[2] for c in CASES])
def test_all_caps_titles_become_title_case_keeping_acronyms(fetched, abstract, shown):
    assert title_case(fetched, abstract) == shown


@pytest.mark.parametrize(
    "title",
    ["BERT: Pre-training of Deep Bidirectional Transformers", "Attention Is All You Need", "GPT-4", "T5", ""],
)
def test_titles_with_lower_case_letters_are_left_alone(title):
    assert title_case(title, "BERT is ...") == title


def test_the_site_record_carries_the_title_case_title():
    meta = PaperMeta(
        arxiv_id="2106.09685",
        version="v2",
        title=CASES[0][0],
        authors=["Edward J. Hu"],
        abstract=CASES[0][1],
        categories=["cs.CL"],
        primary_category="cs.CL",
        published="2021-06-17",
        updated="2021-10-16",
    )
    record = paper_record(meta, 0, 1, (100, 900))
    assert record.title == CASES[0][2]
    assert json.loads(json.dumps(record.to_json()))["title"] == CASES[0][2]


# A title with lower case letters whose PDF set a name in capitals (or cased it plainly): the abstract's
# mixed-case spelling decides, a long capitalised name that spells no acronym of the title becomes a
# name, and true acronyms stay. Titles and abstract phrases from ../shared/arxiv-mirror.
MIXED = [
    ("QLORA: Efficient Finetuning of Quantized LLMs", "We present QLoRA, an efficient finetuning approach",
     "QLoRA: Efficient Finetuning of Quantized LLMs"),
    ("Roformer: Enhanced Transformer with Rotary Position Embedding", "named RoFormer. ... roformer",
     "RoFormer: Enhanced Transformer with Rotary Position Embedding"),
    ("SELF-INSTRUCT: Aligning Language Model with Self Generated Instructions", "We introduce SELF-INSTRUCT, a",
     "Self-Instruct: Aligning Language Model with Self Generated Instructions"),
    ("TIES-MERGING: Resolving Interference When Merging Models", "we propose TIES-MERGING",
     "Ties-Merging: Resolving Interference When Merging Models"),
    ("MEDUSA: Simple LLM Inference Acceleration Framework with Multiple Decoding Heads", "we present MEDUSA",
     "Medusa: Simple LLM Inference Acceleration Framework with Multiple Decoding Heads"),
    ("RAPTOR: Recursive Abstractive Processing for Tree-Organized Retrieval", "Our model, RAPTOR, ",
     "RAPTOR: Recursive Abstractive Processing for Tree-Organized Retrieval"),
    ("REALM: Retrieval-Augmented Language Model Pre-Training", "REALM", "REALM: Retrieval-Augmented Language Model Pre-Training"),
    ("RAFT: Adapting Language Model to Domain Specific RAG", "RAFT", "RAFT: Adapting Language Model to Domain Specific RAG"),
    ("Recitation-Augmented Language Models", "RECITation-augmented gEneration (RECITE)", "Recitation-Augmented Language Models"),
    ("YaRN: Efficient Context Window Extension of Large Language Models", "Yet another RoPE extensioN method",
     "YaRN: Efficient Context Window Extension of Large Language Models"),
]  # fmt: skip


@pytest.mark.parametrize(("fetched", "abstract", "shown"), MIXED, ids=[c[2] for c in MIXED])
def test_capitalised_names_in_mixed_titles_take_the_abstracts_spelling(fetched, abstract, shown):
    assert title_case(fetched, abstract) == shown
