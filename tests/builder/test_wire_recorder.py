"""scripts/wire_recorder.py, the proxy scripts/bench_local_llm.py puts between a client and llama.cpp,
passes a stream through unchanged and counts its events with the CLI's own SSE parser."""

import sys

import pytest
from support.mock_llm import EVENT_CHARS, MockLLM

from builder.paths import REPO_ROOT
from builder.providers import ProviderError, build_request, stream_answer
from readingroom_core.answers import Prompt

sys.path.insert(0, str(REPO_ROOT / "scripts"))
from wire_recorder import WireRecorder  # noqa: E402

PROMPT = Prompt(
    system="Answer from the sources.",
    messages=[
        {
            "role": "user",
            "content": '<source n="1" cite="arXiv:2005.11401 p.3" title="RAG" section="Intro">\nWe endow '
            "pre-trained, parametric-memory generation models with a non-parametric memory through a "
            "general-purpose fine-tuning approach.\n</source>\nWhat is RAG?",
        }
    ],
)


def ask(llm: MockLLM, wire: WireRecorder) -> tuple[str, list[str]]:
    """The CLI's client asking through the recorder: the answer's text and why it finished."""
    request = build_request("openai", f"{wire.base_url}/v1", "m", PROMPT, llm.api_key)
    reasons: list[str] = []
    text = "".join(stream_answer(request, "m", llm.api_key, timeout=10, on_finish=reasons.append))
    return text, reasons


def test_a_whole_stream_is_passed_on_and_its_events_counted():
    with MockLLM() as llm, WireRecorder(llm.base_url) as wire:
        text, reasons = ask(llm, wire)
    assert text == llm.answers[0].text and reasons == ["stop"]
    (exchange,) = wire.exchanges
    assert exchange.status == 200 and exchange.first_byte_s is not None and not exchange.client_hung_up
    # the role event, one per piece of text, the finish event and [DONE]
    assert exchange.sse_events == -(-len(text) // EVENT_CHARS) + 3
    assert exchange.done_marker and exchange.finish_reasons == ["stop"] and exchange.comments == 0


def test_a_dropped_stream_reaches_the_client_as_dropped():
    with MockLLM(scenario="dropped") as llm, WireRecorder(llm.base_url) as wire:
        with pytest.raises(ProviderError, match="broke off"):
            ask(llm, wire)
    (exchange,) = wire.exchanges
    assert exchange.sse_events > 1 and not exchange.done_marker and not exchange.finish_reasons
