"""Citations as models write them, and the evidence they cite: the hard cases the core's verifier is held
to in CPython (tests/core/test_citations.py) and in Pyodide (tests/browser/test_pyodide.py).

The evidence has the shape `readingroom_core.answers.evidence()` returns; its page texts carry what PDF
text really holds: ligatures (ﬁ, ﬂ), a word hyphenated at a line break, a word hyphenated across a page
break, typographic quotes and dashes.
"""

SURVEY, RAG = "2312.10997", "2005.11401"
PAGE_7 = (
    "Large language models face hallucination and outdated knowledge. Retrieval-Augmented Generation (RAG) "
    "has emerged as a promising solution by incorporating knowledge from external databases. The Naive RAG "
    "paradigm follows a traditional process that includes indexing, retrieval, and gene-"
)
PAGE_8 = (
    "ration, also known as a \u201cRetrieve\u2013Read\u201d framework. Indexing starts with the cleaning "
    "and extraction of raw data in diverse formats like PDF, HTML, Word, and Markdown."
)
PAGE_10 = (
    "The \ufb01ne-tuning of the retriever lets it adapt to \ufb02exible domain data. Dur-\ning retrieval, "
    "the system computes similarity scores between the query vector and the vectors of chunks."
)
PAGE_3 = (
    "We endow pre-trained, parametric-memory generation models with a non-parametric memory through a "
    "general-purpose fine-tuning approach which we refer to as retrieval-augmented generation (RAG)."
)
EVIDENCE = {
    "sources": [
        {
            "n": 1,
            "arxiv_id": SURVEY,
            "version": "v2",
            "page_start": 7,
            "page_end": 8,
            "text": PAGE_7 + "\n\n" + PAGE_8,
        },
        {"n": 2, "arxiv_id": SURVEY, "version": "v2", "page_start": 10, "page_end": 10, "text": PAGE_10},
        {"n": 3, "arxiv_id": RAG, "page_start": 3, "page_end": 3, "text": PAGE_3},
    ],
    "pages": {
        SURVEY: {
            "6": "Figure 1 shows the timeline.",
            "7": PAGE_7,
            "8": PAGE_8,
            "9": "Table 1.",
            "10": PAGE_10,
        },
        RAG: {"2": "Introduction.", "3": PAGE_3, "4": "Results."},
    },
}
Q_SURVEY = "has emerged as a promising solution by incorporating knowledge from external databases"
Q_RAG = "a non-parametric memory through a general-purpose fine-tuning approach"
Q_P8 = "Indexing starts with the cleaning and extraction of raw data"

# (name, answer, expected status of each citation in order, expected uncited sentences)
CASES = [
    (
        "two citations in one sentence",
        f'RAG adds external knowledge [arXiv:{SURVEY} p.7 "{Q_SURVEY}"] [arXiv:{RAG} p.3 "{Q_RAG}"].',
        ["verified", "verified"],
        [],
    ),
    (
        "two citations in one bracket",
        f'RAG adds external knowledge [arXiv:{SURVEY} p.7 "{Q_SURVEY}"; arXiv:{RAG} p.3 "{Q_RAG}"].',
        ["verified", "verified"],
        [],
    ),
    (
        "page range with an en dash and typographic quotes",
        f"Indexing cleans raw data first [arXiv:{SURVEY} pp. 7\u20138: \u201c{Q_P8}\u201d].",
        ["verified"],
        [],
    ),
    (
        "quote across a page break, hyphenated across it",
        f'Naive RAG is retrieve-then-read [arXiv:{SURVEY} p.7 "includes indexing, retrieval, and generation, '
        'also known as a"].',
        ["verified"],
        [],
    ),
    (
        "ligatures and a line-break hyphen in the PDF text",
        f'Retrievers can be tuned [arXiv:{SURVEY} p.10 "The fine-tuning of the retriever lets it adapt to '
        f'flexible domain data. During retrieval"].',
        ["verified"],
        [],
    ),
    (
        "an invented id",
        f'RAG was introduced in 2020 [arXiv:2401.99999 p.3 "{Q_RAG}"].',
        ["invented"],
        [],
    ),
    (
        "right id, page outside every source",
        f'RAG adds external knowledge [arXiv:{SURVEY} p.9 "{Q_SURVEY}"].',
        ["page_not_found"],
        [],
    ),
    (
        "right id, source page, but the quote sits on the other page of the source",
        f'Indexing cleans raw data first [arXiv:{SURVEY} p.7 "{Q_P8}"].',
        ["quote_not_found"],
        [],
    ),
    (
        "close but not verbatim",
        f'RAG adds external knowledge [arXiv:{SURVEY} p.7 "has emerged as a promising solution by adding '
        f'knowledge from external databases"].',
        ["quote_not_found"],
        [],
    ),
    (
        "Markdown around the citation and its parts",
        f'**RAG** adds external knowledge **[arXiv:{SURVEY} p.7 "{Q_SURVEY}"]** and memory '
        f"[*arXiv:{RAG}*, `p. 3`, _\u201c{Q_RAG}\u201d_].",
        ["verified", "verified"],
        [],
    ),
    (
        "citations in a list and a table, with intro, heading and header row",
        "## What the sources say\n\nThe main points:\n\n"
        f'- RAG adds external knowledge [arXiv:{SURVEY} p.7 "{Q_SURVEY}"].\n'
        f'1. It uses a non-parametric memory [arXiv:{RAG} p.3 "{Q_RAG}"]\n\n'
        "| Paper | Finding |\n|---|---|\n"
        f'| RAG | fine-tuned retrievers adapt to domain data [arXiv:{SURVEY} p.10 "lets it adapt to flexible '
        f'domain data"] |\n',
        ["verified", "verified", "verified"],
        [],
    ),
    (
        "bare id, version suffix, no quote, too short a quote",
        f'RAG adds external knowledge ({SURVEY}v2, p. 7). It uses memory [arXiv:{RAG} p.3 "a non-parametric"]. '
        f"It also indexes documents [arXiv:{SURVEY} p.8].",
        ["no_quote", "no_quote", "no_quote"],
        [],
    ),
    (
        "uncited claims, and no phrase about the sources exempts one",
        f'RAG adds external knowledge [arXiv:{SURVEY} p.7 "{Q_SURVEY}"]. RAG was first deployed at a large '
        "search company in 2019. The sources do not say it, but BERT has 340M parameters. Yes.",
        ["verified"],
        [
            "RAG was first deployed at a large search company in 2019.",
            "The sources do not say it, but BERT has 340M parameters.",
        ],
    ),
    (
        "a version the site does not hold",
        f'RAG adds external knowledge [arXiv:{SURVEY}v97 p.7 "{Q_SURVEY}"] [arXiv:{SURVEY}v2 p.7 "{Q_SURVEY}"].',
        ["version_not_found", "verified"],
        [],
    ),
    (
        "the spec's shape: the quote after the brackets, in italics",
        f'RAG adds external knowledge [arXiv:{SURVEY} p.7] *"{Q_SURVEY}"*. It also uses memory '
        f"[arXiv:{RAG} p.3] _\u201c{Q_RAG}\u201d_.",
        ["verified", "verified"],
        [],
    ),
    (
        "the quote after the brackets: plain, after a colon, after a dash, in italics alone",
        f'RAG adds external knowledge [arXiv:{SURVEY} p.7] "{Q_SURVEY}". It uses memory [arXiv:{RAG} p.3]: '
        f'\u201c{Q_RAG}\u201d. Indexing cleans data [arXiv:{SURVEY} p.8] \u2014 "{Q_P8}". Retrievers adapt '
        f"[arXiv:{SURVEY} p.10] *lets it adapt to flexible domain data*.",
        ["verified", "verified", "verified", "verified"],
        [],
    ),
    (
        "comma before the page, round brackets, a page range, each with the quote after",
        f'RAG adds external knowledge [arXiv:{SURVEY}, p. 7] "{Q_SURVEY}". It uses memory (arXiv:{RAG}, p.3) '
        f'"{Q_RAG}". Indexing cleans data [arXiv:{SURVEY} pp.7-8] "{Q_P8}".',
        ["verified", "verified", "verified"],
        [],
    ),
    (
        "no page: an id of the sources, and one that is not",
        f'RAG adds external knowledge [arXiv:{SURVEY}] *"{Q_SURVEY}"*. Attention was introduced long ago '
        "[arXiv:1410.2598].",
        ["no_page", "invented"],
        [],
    ),
    (
        "markup echoed from the prompt is not a citation",
        f'<source n="1" cite="arXiv:{SURVEY} p.7" title="Retrieval-Augmented Generation for Large Language '
        f'Models">\nRAG adds external knowledge [arXiv:{SURVEY} p.7 "{Q_SURVEY}"].',
        ["verified"],
        [],
    ),
    (
        "a citation after the full stop belongs to its sentence",
        f'RAG adds external knowledge. [arXiv:{SURVEY} p.7 "{Q_SURVEY}"] Retrieval also lets models cite '
        "their evidence in every single answer.",
        ["verified"],
        ["Retrieval also lets models cite their evidence in every single answer."],
    ),
]
