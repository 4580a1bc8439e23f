"""The suite's own corpus: four papers written as real PDFs, served by the loopback arXiv.

They carry the ids of the four small mirror papers the tests used before (so ids, tags and years in the
tests read the same), but their text is generated here: a title page with the arXiv stamp and an
abstract, numbered sections in two columns, running headers and page numbers, and a numbered reference
list, laid out line by line as LaTeX would. Each paper is about one topic (document expansion,
distillation, grouped-query attention, the renormalization group), so keyword and semantic queries
have a right answer; `QUESTIONS` are dev-style questions whose evidence sentence lies on a known page.

Sentences are drawn from per-topic templates with a seeded generator: every paragraph is distinct and
the PDFs are byte-identical from run to run.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

import pymupdf

from support.arxiv_server import FakeArxiv, FakePaper, FakeVersion

PAGE_WIDTH, PAGE_HEIGHT = 612, 792
MARGIN, GUTTER, TOP, BOTTOM = 54, 18, 72, 740
COLUMN_WIDTH = (PAGE_WIDTH - 2 * MARGIN - GUTTER) / 2
FONT, BOLD, SIZE, LEADING = "tiro", "tibo", 10, 12


@dataclass(frozen=True)
class Topic:
    arxiv_id: str
    title: str
    authors: list[str]
    published: str
    categories: list[str]
    versions: int
    abstract: str
    sections: list[str]
    templates: list[str]
    slots: dict[str, list[str]]
    facts: dict[str, str]  # section title -> a sentence that a question asks about (placed once)
    references: list[str]


DOC2QUERY = Topic(
    arxiv_id="1904.08375",
    title="Expanding Documents with Predicted Queries for Passage Retrieval",
    authors=["Rosa Lindqvist", "Tomasz Okafor", "Mei Sato"],
    published="2019-04-17T17:57:35Z",
    categories=["cs.IR", "cs.CL"],
    versions=2,
    abstract=(
        "We expand every passage of a collection with queries that a sequence-to-sequence model predicts "
        "for it, and index the expanded text with an ordinary inverted index. The expansion adds the words "
        "users actually type, repairs vocabulary mismatch, and costs nothing at query time."
    ),
    sections=["Introduction", "Query Prediction", "Expansion and Indexing", "Experiments", "Analysis"],
    templates=[
        "Document expansion adds {what} to each passage before indexing, so the inverted index sees {effect}.",
        "The query predictor is a transformer encoder-decoder trained on {pairs} pairs of passages and relevant queries.",
        "On {dataset}, the expanded index improves MRR@10 from {low} to {high} with BM25 as the ranker.",
        "Vocabulary mismatch between short queries and long passages remains the main failure of lexical retrieval.",
        "Predicted queries often copy salient terms of the passage, which raises their term frequency in the index.",
        "Some predicted queries introduce synonyms that never occur in the passage, which helps recall on {dataset}.",
        "Expansion happens offline, so the latency of the search engine stays at {ms} milliseconds per query.",
        "We sample queries with top-k decoding, where k is {k}, because beam search produces near duplicates.",
        "Re-ranking the expanded BM25 candidates with a cross-encoder adds {gain} points of MRR@10 on {dataset}.",
        "The expanded collection is {ratio} times larger than the original one, which the index compresses well.",
        "Passages about {subject} gain the most, since users describe them with words the authors avoided.",
        "An inverted index over expanded passages answers {qps} queries per second on a single commodity server.",
        "We compare against RM3 pseudo-relevance feedback, which expands the query instead of the document.",
        "Query prediction also works for {dataset} although the predictor was trained only on MS MARCO.",
        "Doc2query needs no training data beyond the {pairs} passage-query pairs, and the model is trained once.",
        "We call the method doc2query: a model reads a passage and writes the queries it answers.",
        "With doc2query, passages about {subject} gain new terms that match how people search for them.",
    ],
    slots={
        "what": ["predicted queries", "generated questions", "likely search phrases"],
        "effect": ["the words of future searchers", "terms missing from the passage", "new index terms"],
        "pairs": ["400,000", "500,000", "532,761"],
        "dataset": ["MS MARCO", "TREC CAR", "TREC DL 2019", "Natural Questions"],
        "low": ["18.4", "18.7", "19.1"],
        "high": ["21.5", "21.8", "22.4"],
        "ms": ["55", "61", "64"],
        "k": ["10", "20"],
        "gain": ["12.1", "13.4", "14.0"],
        "ratio": ["1.6", "1.8", "2.1"],
        "subject": ["medicine", "tax law", "cooking", "car repair"],
        "qps": ["90", "110", "140"],
    },
    facts={
        "Expansion and Indexing": (
            "For every document, we append ten predicted queries with doc2query, sampled with top-k decoding, "
            "before the index is built."
        ),
        "Analysis": "About thirty-one percent of the predicted query terms are new words that the passage lacks.",
    },
    references=[
        "Stephen Robertson and Hugo Zaragoza. The probabilistic relevance framework: BM25 and beyond. 2009.",
        "Payal Bajaj et al. MS MARCO: A human generated machine reading comprehension dataset. 2016.",
        "Victor Lavrenko and W. Bruce Croft. Relevance-based language models. In SIGIR, 2001.",
    ],
)

DISTILLATION = Topic(
    arxiv_id="2412.19048",
    title="Compact Students from Large Teachers: Logit Distillation for Language Models",
    authors=["Amara Nwosu", "Felix Brandt"],
    published="2024-12-26T04:55:12Z",
    categories=["cs.CL", "cs.LG"],
    versions=1,
    abstract=(
        "We distil a large language model into a student with half of its layers by matching softened "
        "output distributions and hidden states. The student keeps most of the teacher's accuracy on "
        "reading comprehension while running much faster."
    ),
    sections=["Introduction", "Distillation Loss", "Student Architecture", "Training Setup", "Results"],
    templates=[
        "The student minimises the {loss} between its output distribution and the teacher's softened distribution.",
        "A temperature above one flattens the teacher's logits, so the {what} carry information about similar tokens.",
        "We initialise the student from every second layer of the teacher, which speeds up {stage} considerably.",
        "On {dataset}, the student reaches {score} percent of the teacher's accuracy with {params} million parameters.",
        "The cosine loss between hidden states aligns the directions of the student and teacher representations.",
        "Distillation on {tokens} billion tokens of unlabelled text is enough for the student to converge.",
        "Inference with the student is {speed} times faster on a single GPU at batch size {batch}.",
        "Removing the hidden-state loss costs {drop} points on {dataset}, the largest drop in our ablation.",
        "The teacher is frozen during distillation and only provides soft targets for each token of the batch.",
        "A student trained from scratch without the teacher's soft labels lags behind by {drop} points.",
        "We use a learning rate of {lr} with linear warm-up over the first {warm} steps of training.",
        "Knowledge distillation transfers the teacher's dark knowledge, the relative probabilities of wrong answers.",
        "The compressed model fits on a mobile phone and answers a question in {ms} milliseconds.",
    ],
    slots={
        "loss": ["Kullback-Leibler divergence", "cross-entropy", "soft-target loss"],
        "what": ["soft targets", "small probabilities", "output distributions"],
        "stage": ["convergence", "training", "the first epoch"],
        "dataset": ["SQuAD", "GLUE", "RACE", "BoolQ"],
        "score": ["95", "96", "97"],
        "params": ["66", "82", "110"],
        "tokens": ["2", "3", "5"],
        "speed": ["1.6", "1.9", "2.3"],
        "batch": ["1", "8", "32"],
        "drop": ["0.9", "1.4", "2.2"],
        "lr": ["5e-4", "3e-4"],
        "warm": ["2,000", "4,000"],
        "ms": ["38", "45", "52"],
    },
    facts={
        "Distillation Loss": (
            "The distillation loss softens the teacher logits with a temperature of four before comparing "
            "them with the student's."
        ),
        "Student Architecture": (
            "The student keeps six of the teacher's twelve layers and is forty percent smaller in total."
        ),
    },
    references=[
        "Geoffrey Hinton, Oriol Vinyals and Jeff Dean. Distilling the knowledge in a neural network. 2015.",
        "Victor Sanh et al. DistilBERT, a distilled version of BERT. 2019.",
        "Xiaoqi Jiao et al. TinyBERT: Distilling BERT for natural language understanding. 2020.",
    ],
)

GQA = Topic(
    arxiv_id="2305.13245",
    title="Grouped-Query Attention: Sharing Key-Value Heads for Fast Decoding",
    authors=["Ines Carvalho", "Kwame Mensah", "Lena Vogel"],
    published="2023-05-22T17:16:38Z",
    categories=["cs.CL", "cs.LG"],
    versions=1,
    abstract=(
        "Multi-query attention shares one key-value head among all query heads and speeds up decoding, "
        "but it loses quality. Grouped-query attention shares each key-value head among a group of query "
        "heads, and uptraining converts existing multi-head checkpoints at a small cost."
    ),
    sections=["Introduction", "Grouped-Query Attention", "Uptraining", "Experiments", "Discussion"],
    templates=[
        "Grouped query attention divides the {n} query heads into groups, and each group shares one key and value head.",
        "During autoregressive decoding, loading the key-value cache dominates the {what} of every step.",
        "Multi-query attention uses a single key-value head, which shrinks the cache by a factor of {n}.",
        "With {g} groups, grouped-query attention interpolates between multi-head and multi-query attention.",
        "We mean-pool the key and value projections of each group when converting a multi-head checkpoint.",
        "On {dataset}, grouped-query attention matches multi-head quality within {delta} ROUGE points.",
        "The decoder of the XXL model spends {share} percent of its inference time reading keys and values.",
        "Memory bandwidth, not arithmetic, limits the speed of incremental decoding on {hw}.",
        "Uptraining continues pre-training of the converted checkpoint for a few thousand steps.",
        "Grouped query attention is applied to the decoder self-attention and cross-attention layers alike.",
        "Inference time per sample falls from {slow} to {fast} seconds when grouped query attention replaces multi-head attention.",
        "Larger models benefit more, because their number of heads grows while the group count stays fixed.",
        "Training instability of multi-query attention appears on long inputs of {len} tokens.",
    ],
    slots={
        "n": ["32", "64"],
        "what": ["latency", "memory traffic", "time"],
        "g": ["4", "8", "16"],
        "dataset": ["CNN/Daily Mail", "arXiv summarisation", "WMT English-German", "TriviaQA"],
        "delta": ["0.1", "0.2", "0.3"],
        "share": ["70", "75", "80"],
        "hw": ["TPUv4", "GPUs", "accelerators"],
        "slow": ["1.51", "1.48"],
        "fast": ["0.28", "0.31"],
        "len": ["2,048", "4,096"],
    },
    facts={
        "Grouped-Query Attention": (
            "Our uptrained model uses eight key-value heads, each shared by a group of query heads."
        ),
        "Uptraining": "Uptraining needs only five percent of the original pre-training compute.",
    },
    references=[
        "Ashish Vaswani et al. Attention is all you need. In NeurIPS, 2017.",
        "Noam Shazeer. Fast transformer decoding: One write-head is all you need. 2019.",
        "Colin Raffel et al. Exploring the limits of transfer learning with a unified text-to-text transformer. 2020.",
    ],
)

RENORMALIZATION = Topic(
    arxiv_id="1410.3831",
    title="Coarse-Graining Spins with Boltzmann Machines: A Renormalization Group View of Deep Networks",
    authors=["Pavel Ivanov", "Sofia Moreau"],
    published="2014-10-14T19:39:34Z",
    categories=["stat.ML", "cond-mat.stat-mech"],
    versions=1,
    abstract=(
        "We map the variational renormalization group onto restricted Boltzmann machines stacked in depth. "
        "Trained on configurations of a lattice spin model at its critical point, the stacked machines "
        "learn block-spin transformations without being told about them."
    ),
    sections=[
        "Introduction",
        "Variational Renormalization",
        "Mapping to Boltzmann Machines",
        "Ising Model",
        "Discussion",
    ],
    templates=[
        "The renormalization group coarse-grains a lattice {how}, keeping long-range physics and discarding microscopic detail.",
        "A restricted Boltzmann machine has visible spins, hidden spins and couplings between the two layers.",
        "At the critical temperature the correlation length diverges and fluctuations appear at every scale.",
        "Each layer of the stacked machine halves the linear size of the lattice, like a block of {b} by {b} spins.",
        "The free energy of the coarse-grained system must equal the free energy of the original one.",
        "Hidden units of the {layer} layer respond to blocks of spins that are aligned in the same direction.",
        "The Hamiltonian of the coarse-grained model contains couplings between {kind} spins.",
        "Samples from the Monte Carlo simulation are drawn at {temp} in units of the coupling constant.",
        "Magnetisation and susceptibility computed from the hidden layer follow the scaling of the original lattice.",
        "The receptive fields of deep hidden units grow with depth, as in a real-space renormalization scheme.",
        "Entropy is lost at each coarse-graining step, since many microscopic states map to one block state.",
        "Statistical physics explains why depth helps when the data have structure at {many} scales.",
        "We train each machine with contrastive divergence on {count} spin configurations of size {size}.",
    ],
    slots={
        "how": ["block by block", "in steps", "scale by scale"],
        "b": ["2"],
        "layer": ["first", "second", "third"],
        "kind": ["nearest-neighbour", "next-nearest-neighbour", "four-spin"],
        "temp": ["the critical point", "2.269", "a temperature just above the transition"],
        "many": ["many", "several", "all"],
        "count": ["20,000", "50,000"],
        "size": ["40 by 40", "20 by 20"],
    },
    facts={
        "Ising Model": (
            "The Boltzmann machines are trained on spin configurations of the two-dimensional nearest-neighbour "
            "Ising model."
        ),
        "Variational Renormalization": (
            "A block-spin transformation keeps the long-wavelength behaviour of the lattice and discards "
            "the short-range fluctuations inside each block."
        ),
    },
    references=[
        "Kenneth G. Wilson. The renormalization group: Critical phenomena and the Kondo problem. 1975.",
        "Leo P. Kadanoff. Scaling laws for Ising models near the critical temperature. 1966.",
        "Geoffrey Hinton and Ruslan Salakhutdinov. Reducing the dimensionality of data with neural networks. 2006.",
    ],
)

TOPICS = (DOC2QUERY, DISTILLATION, GQA, RENORMALIZATION)
PAPERS = tuple(topic.arxiv_id for topic in TOPICS)


def lengthened(topic: Topic, arxiv_id: str, parts: int) -> Topic:
    """`topic` written `parts` times over under another id, one version: a paper of about 5 x `parts` pages."""
    sections = [
        title if part == 1 else f"{title}, Part {part}"
        for part in range(1, parts + 1)
        for title in topic.sections
    ]
    return replace(topic, arxiv_id=arxiv_id, sections=sections, versions=1)


# Long papers (about 60 pages each), for builds that must still be parsing or embedding when they are killed.
LONG_TOPICS = tuple(lengthened(topic, f"2506.{n:05d}", 12) for n, topic in enumerate(TOPICS, start=1))
LONG_PAPERS = tuple(topic.arxiv_id for topic in LONG_TOPICS)
TOPIC_BY_ID = {topic.arxiv_id: topic for topic in (*TOPICS, *LONG_TOPICS)}
PARAGRAPHS_PER_SECTION = 7
SENTENCES_PER_PARAGRAPH = (5, 8)

# (query, paper, the fact it asks about); the gold page is wherever layout put the fact.
QUESTION_SPECS = [
    (
        "How many predicted queries does doc2query append to each document?",
        DOC2QUERY,
        "Expansion and Indexing",
    ),
    ("What share of predicted query terms are missing from the passage?", DOC2QUERY, "Analysis"),
    (
        "Which temperature softens the teacher logits in the distillation loss?",
        DISTILLATION,
        "Distillation Loss",
    ),
    ("How many of the teacher's layers does the student keep?", DISTILLATION, "Student Architecture"),
    ("How many key-value heads does the uptrained grouped-query model use?", GQA, "Grouped-Query Attention"),
    ("What fraction of pre-training compute does uptraining need?", GQA, "Uptraining"),
    ("Which lattice model provides the spin configurations for training?", RENORMALIZATION, "Ising Model"),
    (
        "What does a block-spin transformation keep and what does it discard?",
        RENORMALIZATION,
        "Variational Renormalization",
    ),
]
NEGATIVE_QUESTIONS = [
    "What is the boiling point of ethanol at sea level?",
    "Who painted the ceiling of the Sistine Chapel?",
    "Which port protocol does SMTP use by default?",
]
# More queries in the dev set's style, for comparisons that need many (browser vs CLI, Pyodide vs CPython).
EXTRA_QUERIES = [
    "Why does beam search produce near-duplicate queries?",
    "Does document expansion slow down query latency?",
    "How does RM3 differ from expanding the document?",
    "What does a cross-encoder re-ranker add on top of expanded BM25?",
    "Which datasets is the query predictor evaluated on?",
    "How much faster is the distilled student at inference?",
    "What happens without the hidden-state cosine loss?",
    "How is the student initialised from the teacher?",
    "What is dark knowledge in distillation?",
    "Why is incremental decoding limited by memory bandwidth?",
    "How are multi-head checkpoints converted to grouped-query attention?",
    "Does grouped-query attention lose quality compared with multi-head attention?",
    "Why does multi-query attention become unstable?",
    "What happens to the correlation length at the critical temperature?",
    "How do hidden units respond to blocks of aligned spins?",
    "Why does depth help when data have structure at many scales?",
    "How are the Boltzmann machines trained on Monte Carlo samples?",
    "year:2023 key-value cache",
    "cat:cs.IR inverted index",
    "author:ivanov free energy",
]
# Shares no indexed term with the four papers; only meaning links it to the renormalization paper.
PARAPHRASE = "thermodynamics of perceptrons"


@dataclass
class Layout:
    """Text placed on pages: lines with their positions, and the page each placed fact landed on."""

    doc: pymupdf.Document = field(default_factory=pymupdf.open)
    header: str = ""
    page: pymupdf.Page | None = None
    column: int = 0
    y: float = TOP
    fact_pages: dict[str, int] = field(default_factory=dict)
    top_of_column: float = TOP  # the first page's columns start below the abstract

    @property
    def page_number(self) -> int:
        return self.doc.page_count

    def new_page(self) -> None:
        self.page = self.doc.new_page(width=PAGE_WIDTH, height=PAGE_HEIGHT)
        number = self.page_number
        if number > 1:
            self.page.insert_text((MARGIN, 44), self.header, fontsize=8, fontname=FONT)
        self.page.insert_text((PAGE_WIDTH / 2 - 4, 770), str(number), fontsize=9, fontname=FONT)
        self.column, self.y = 0, TOP

    def x(self) -> float:
        return MARGIN + self.column * (COLUMN_WIDTH + GUTTER)

    def next_line(self, height: float) -> None:
        if self.y + height > BOTTOM:
            self.next_column()

    def next_column(self) -> None:
        if self.column == 0:
            self.column, self.y = 1, self.top_of_column
        else:
            self.new_page()
            self.top_of_column = TOP

    def write(
        self, text: str, *, bold: bool = False, size: float = SIZE, space_after: float = 4, keep: bool = False
    ) -> None:
        """Lines of `text` down the columns; `keep`: all in one column (headings with what follows, facts)."""
        font = BOLD if bold else FONT
        lines = wrap(text, font, size, COLUMN_WIDTH)
        if keep and self.y + len(lines) * size * 1.2 > BOTTOM:
            self.next_column()
        for line in lines:
            self.next_line(size * 1.2)
            self.page.insert_text((self.x(), self.y), line, fontsize=size, fontname=font)
            self.y += size * 1.2
        self.y += space_after


@cache
def _width(word: str, font: str, size: float) -> float:
    return pymupdf.get_text_length(word, fontname=font, fontsize=size)


def wrap(text: str, font: str, size: float, width: float) -> list[str]:
    """Greedy line breaking by the font's advance widths (base-14 fonts: no kerning)."""
    space = _width(" ", font, size)
    lines, current, used = [], [], 0.0
    for word in text.split():
        extra = _width(word, font, size) + (space if current else 0.0)
        if current and used + extra > width:
            lines.append(" ".join(current))
            current, used = [word], _width(word, font, size)
        else:
            current.append(word)
            used += extra
    return [*lines, " ".join(current)] if current else lines


def paragraphs(topic: Topic, section: int, rng: random.Random) -> list[str]:
    out = []
    for _ in range(PARAGRAPHS_PER_SECTION):
        count = rng.randint(*SENTENCES_PER_PARAGRAPH)
        sentences = [
            template.format(**{name: rng.choice(values) for name, values in topic.slots.items()})
            for template in rng.sample(topic.templates, count)
        ]
        out.append(" ".join(sentences))
    return out


def write_pdf(topic: Topic, version: int) -> tuple[bytes, dict[str, int]]:
    """The paper as PDF bytes, and the page of each fact sentence."""
    rng = random.Random(f"{topic.arxiv_id}v{version}")
    layout = Layout(header=topic.title if len(topic.title) < 80 else topic.title[:77] + "...")
    layout.new_page()
    page = layout.page
    stamp = f"arXiv:{topic.arxiv_id}v{version}  [{topic.categories[0]}]  {topic.published[:10]}"
    page.insert_text((24, 560), stamp, fontsize=18, fontname=FONT, rotate=90)
    y = TOP + 10
    for line in wrap(topic.title, BOLD, 16, PAGE_WIDTH - 2 * MARGIN - 40):
        page.insert_text((MARGIN + 20, y), line, fontsize=16, fontname=BOLD)
        y += 20
    page.insert_text((MARGIN + 20, y + 6), ", ".join(topic.authors), fontsize=11, fontname=FONT)
    y += 36
    page.insert_text((PAGE_WIDTH / 2 - 24, y), "Abstract", fontsize=11, fontname=BOLD)
    y += 16
    for line in wrap(topic.abstract, FONT, SIZE, PAGE_WIDTH - 2 * MARGIN - 80):
        page.insert_text((MARGIN + 40, y), line, fontsize=SIZE, fontname=FONT)
        y += LEADING
    layout.y = layout.top_of_column = y + 18
    for number, title in enumerate(topic.sections, start=1):
        if layout.y > BOTTOM - 60:  # a heading never ends a column
            layout.next_column()
        layout.write(f"{number} {title}", bold=True, size=12, space_after=6)
        for index, text in enumerate(paragraphs(topic, number, rng)):
            layout.write(text)
            fact = topic.facts.get(title)
            if fact and index == 1:
                layout.write(fact, keep=True)
                layout.fact_pages[title] = layout.page_number
    layout.write("References", bold=True, size=12, space_after=6)
    for number, reference in enumerate(topic.references, start=1):
        layout.write(f"[{number}] {reference}", size=9, space_after=2)
    data = layout.doc.tobytes(garbage=3, deflate=True, no_new_id=True)
    layout.doc.close()
    return data, layout.fact_pages


@dataclass(frozen=True)
class GeneratedPaper:
    topic: Topic
    pdfs: list[bytes]  # one per version, v1 first
    fact_pages: dict[str, int]  # of the latest version

    @property
    def arxiv_id(self) -> str:
        return self.topic.arxiv_id

    @property
    def latest(self) -> bytes:
        return self.pdfs[-1]

    def page_count(self) -> int:
        with pymupdf.open(stream=self.latest, filetype="pdf") as doc:
            return doc.page_count


@cache
def generated(arxiv_id: str) -> GeneratedPaper:
    topic = TOPIC_BY_ID[arxiv_id]
    versions = [write_pdf(topic, number) for number in range(1, topic.versions + 1)]
    return GeneratedPaper(topic, [pdf for pdf, _ in versions], versions[-1][1])


def papers() -> dict[str, GeneratedPaper]:
    """The four papers of the suite's corpus (the long ones are made only when asked for)."""
    return {arxiv_id: generated(arxiv_id) for arxiv_id in PAPERS}


def questions() -> list[dict]:
    """Dev-style questions (`{"id", "query", "relevant", "evidence"}`); the last ones have no answer."""
    rows = []
    for number, (query, topic, section) in enumerate(QUESTION_SPECS, start=1):
        page = papers()[topic.arxiv_id].fact_pages[section]
        rows.append(
            {
                "id": f"g{number:03d}",
                "query": query,
                "relevant": [{"arxiv_id": topic.arxiv_id, "pages": [page]}],
                "evidence": topic.facts[section],
            }
        )
    for number, query in enumerate(NEGATIVE_QUESTIONS, start=len(rows) + 1):
        rows.append({"id": f"g{number:03d}", "query": query, "relevant": [], "evidence": ""})
    return rows


def queries() -> list[str]:
    """Every question's text and the extra queries: 31 queries over all four papers."""
    return [row["query"] for row in questions()] + EXTRA_QUERIES


def write_questions(path: Path) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in questions()), encoding="utf-8")
    return path


def version_date(topic: Topic, number: int) -> str:
    """The date of version `number`: v1 on the publication date, later ones in January of the years after."""
    year = int(topic.published[:4])
    return topic.published[:10] if number == 1 else f"{year + number - 1}-01-15"


def serve(server: FakeArxiv) -> None:
    """Put the four papers, every version, on the loopback arXiv."""
    for paper in papers().values():
        topic = paper.topic
        fake = FakePaper(
            arxiv_id=topic.arxiv_id,
            title=topic.title,
            authors=list(topic.authors),
            abstract=topic.abstract,
            published=topic.published,
            primary_category=topic.categories[0],
            categories=list(topic.categories),
        )
        for number, pdf in enumerate(paper.pdfs, start=1):
            updated = topic.published if number == 1 else f"{version_date(topic, number)}T09:00:00Z"
            fake.versions.append(FakeVersion(version=f"v{number}", pdf=pdf, updated=updated))
        server.papers[topic.arxiv_id] = fake


def write_mirror(folder: Path, ids=PAPERS) -> Path:
    """A local mirror of `ids` (any of PAPERS and LONG_PAPERS) as ../shared/arxiv-mirror has it: `pdf/<id>.pdf`,
    and `meta/<id>.json` with the latest version, its date, and `published` only when that version is v1."""
    (folder / "pdf").mkdir(parents=True, exist_ok=True)
    (folder / "meta").mkdir(parents=True, exist_ok=True)
    for arxiv_id in ids:
        paper = generated(arxiv_id)
        topic = paper.topic
        (folder / "pdf" / f"{arxiv_id}.pdf").write_bytes(paper.latest)
        meta = {
            "arxiv_id": arxiv_id,
            "version": f"v{topic.versions}",
            "title": topic.title,
            "authors": topic.authors,
            "abstract": topic.abstract,
            "categories": topic.categories,
            "primary_category": topic.categories[0],
            "published": topic.published[:10] if topic.versions == 1 else "",
            "version_date": version_date(topic, topic.versions),
            "pdf_sha256": hashlib.sha256(paper.latest).hexdigest(),
        }
        (folder / "meta" / f"{arxiv_id}.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return folder
