"""The quote matcher against a table of true quotes (with what PDF text really holds: ligatures, line-end
hyphenation, typographic quotes and dashes, odd spacing, case) and altered ones (a number, sign, unit,
comparison or negation changed, added or dropped). Every true quote verifies; no altered one does."""

import pytest

from readingroom_core.answers import verify
from readingroom_core.verification import find_quote

PAPER = "2106.09685"
PAGE = (
    "LoRA needs 1.4 times fewer steps than full fine-tuning and reduces the error to 4.9% on WikiSQL. "
    "The latency rises by 12 ms per token, while the throughput drops by -3.5% (p < 0.05). "
    "Training on 10,000 examples takes 2.5 hours; accuracy improves by 3 pp over the baseline. "
    "The model does not improve on MNLI and never exceeds 90.2 F1. We cannot use the adapter at "
    "inference, but we can merge the weights. There is no latency overhead, and the now standard setup "
    "applies. The gain for small models is nothing special. Results hold for r \u2264 8 and a batch size "
    "of 64 \u00d7 4. The \ufb01ne-tuned retriever reaches a recall of 79.4% on NQ, with an improvement of "
    "+2.1 points. The e\ufb00ect of the learning rate is signi\ufb01cant for \ufb02exible domain data. Dur-\n"
    "ing pre-train-\ning, the \u201cRetrieve\u2013Read\u201d framework is used for 10\u201320 epochs with a "
    "score of \u22120.3 on the first test."
)

TRUE = [
    "LoRA needs 1.4 times fewer steps than full fine-tuning",
    "reduces the error to 4.9% on WikiSQL",
    "reduces the error to 4.9 % on WikiSQL",
    "reduces  the   error to 4.9%   on WikiSQL.",
    "The latency rises by 12 ms per token",
    "the throughput drops by -3.5% (p < 0.05)",
    "the throughput drops by \u22123.5% (p<0.05)",
    "the throughput drops by \u2013 3.5 % ( p < 0.05 )",
    "Training on 10,000 examples takes 2.5 hours",
    "accuracy improves by 3 pp over the baseline",
    "The model does not improve on MNLI",
    "and never exceeds 90.2 F1",
    "We cannot use the adapter at inference",
    "but we can merge the weights",
    "There is no latency overhead",
    "and the now standard setup applies",
    "The gain for small models is nothing special",
    "Results hold for r \u2264 8 and a batch size of 64 \u00d7 4",
    "Results hold for r\u22648 and a batch size of 64\u00d74",
    "The fine-tuned retriever reaches a recall of 79.4% on NQ",
    "THE FINE-TUNED RETRIEVER REACHES A RECALL OF 79.4% ON NQ",
    "the \ufb01ne-tuned retriever reaches a recall",
    "with an improvement of +2.1 points",
    "The effect of the learning rate is significant",
    "The e\ufb00ect of the learning rate is signi- \ufb01cant",
    "significant for flexible domain data",
    'During pre-training, the "Retrieve-Read" framework',
    "Dur- ing pre-train- ing, the \u201cRetrieve\u2014Read\u201d framework",
    "During pretraining, the 'Retrieve\u2014Read' framework",
    "is used for 10-20 epochs",
    "is used for 10 \u2013 20 epochs",
    "with a score of -0.3 on the first test",
    "with a score of \u2212 0.3 on the first test.",
]

ALTERED = [
    # numbers: a decimal point moved or dropped, a digit changed
    "LoRA needs 14 times fewer steps than full fine-tuning",
    "LoRA needs 0.14 times fewer steps than full fine-tuning",
    "LoRA needs 1.5 times fewer steps than full fine-tuning",
    "reduces the error to 49% on WikiSQL",
    "reduces the error to 0.49% on WikiSQL",
    "reduces the error to 4.8% on WikiSQL",
    "reduces the error to 4.95% on WikiSQL",
    "The latency rises by 1.2 ms per token",
    "The latency rises by 120 ms per token",
    "Training on 1,000 examples takes 2.5 hours",
    "Training on 10,000 examples takes 25 hours",
    "Training on 10,000 examples takes 2.5 minutes",
    "and never exceeds 92.0 F1",
    "and never exceeds 902 F1",
    "reaches a recall of 7.94% on NQ",
    "with a score of -3 on the first test",
    "is used for 1020 epochs",
    "is used for 10-2 epochs",
    "improves by 8 pp over the baseline",
    # signs added or dropped
    "reduces the error to -4.9% on WikiSQL",
    "reduces the error to +4.9% on WikiSQL",
    "the throughput drops by 3.5% (p < 0.05)",
    "the throughput drops by +3.5% (p < 0.05)",
    "the throughput drops by \u00b13.5% (p < 0.05)",
    "with an improvement of 2.1 points",
    "with an improvement of -2.1 points",
    "with a score of 0.3 on the first test",
    "3.5% (p < 0.05). Training on",
    # percent added or dropped, units changed
    "reduces the error to 4.9 on WikiSQL",
    "the throughput drops by -3.5 (p < 0.05)",
    "reaches a recall of 79.4 on NQ",
    "LoRA needs 1.4% times fewer steps",
    "reduces the error to 4.9 pp on WikiSQL",
    "accuracy improves by 3% over the baseline",
    "The latency rises by 12 s per token",
    "The latency rises by 12% per token",
    "The latency rises by 12 \u00b5s per token",
    # comparison signs changed, added or dropped
    "the throughput drops by -3.5% (p > 0.05)",
    "the throughput drops by -3.5% (p = 0.05)",
    "the throughput drops by -3.5% (p \u2264 0.05)",
    "the throughput drops by -3.5% (p 0.05)",
    "Results hold for r \u2265 8 and a batch size",
    "Results hold for r < 8 and a batch size",
    "Results hold for r 8 and a batch size",
    "a batch size of 64 4. The",
    "a batch size of 64 + 4. The",
    "with a score of ~-0.3 on the first test",
    # negations added or dropped, words that are the inside of another word
    "The model does improve on MNLI",
    "The model does not improve on MNLI and exceeds 90.2 F1",
    "MNLI and ever exceeds 90.2 F1",
    "ever exceeds 90.2 F1",
    "We can use the adapter at inference",
    "but we cannot merge the weights",
    "but we can not merge the weights",
    "There is latency overhead",
    "There is now latency overhead",
    "There is not latency overhead",
    "and the no standard setup applies",
    "no latency overhead, and the no",
    "The gain for small models is not",
    "The gain for small models is no",
    "he model does not improve on MNLI",
    "The model does not improve on MNL",
    "The model does not always improve on MNLI",
    "the retriever reaches a recall of 79.4% on NQ",
]


@pytest.mark.parametrize("quote", TRUE)
def test_a_true_quote_verifies(quote):
    assert find_quote(quote, PAGE) is not None


@pytest.mark.parametrize("quote", ALTERED)
def test_an_altered_quote_does_not(quote):
    assert find_quote(quote, PAGE) is None


def test_the_table_is_large_and_the_verifier_agrees_with_it():
    assert len(TRUE) + len(ALTERED) >= 60
    quotes = TRUE + ALTERED
    answer = " ".join(
        f'Claim {n} [arXiv:{PAPER} p.4 "{q.replace(chr(34), chr(39))}"].' for n, q in enumerate(quotes)
    )
    evidence = {
        "sources": [{"n": 1, "arxiv_id": PAPER, "page_start": 4, "page_end": 4, "text": PAGE}],
        "pages": {PAPER: {"4": PAGE}},
    }
    statuses = [c["status"] for c in verify(answer, evidence)["citations"]]
    checkable = [s for s in statuses if s != "no_quote"]
    assert statuses[: len(TRUE)] == ["verified"] * len(TRUE)
    assert "verified" not in statuses[len(TRUE) :] and len(checkable) == len(quotes)
