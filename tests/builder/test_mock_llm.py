"""The loopback mock provider behaves as the browser tests need: CORS preflights, the Anthropic browser
header, real chunked SSE that arrives in pieces, and a slow stream that notices when the client hangs up."""

import http.client
import json
import time
from urllib.parse import urlsplit

import pytest
from support.mock_llm import MockLLM

from builder.providers import sse_events

PROMPT = (
    '<source n="1" cite="arXiv:2005.11401 p.3" title="RAG" section="Intro">\nWe endow pre-trained, '
    "parametric-memory generation models with a non-parametric memory through a general-purpose fine-tuning "
    "approach which we refer to as retrieval-augmented generation.\n</source>"
)


@pytest.fixture
def llm():
    with MockLLM() as server:
        yield server


def connect(llm: MockLLM) -> http.client.HTTPConnection:
    return http.client.HTTPConnection(urlsplit(llm.base_url).netloc, timeout=10)


def post(llm, path, body, headers):
    connection = connect(llm)
    connection.request("POST", path, json.dumps(body), {"content-type": "application/json", **headers})
    return connection, connection.getresponse()


def test_preflight_allows_another_loopback_origin(llm):
    connection = connect(llm)
    connection.request(
        "OPTIONS",
        "/v1/messages",
        headers={
            "Origin": "http://127.0.0.1:9999",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "x-api-key, anthropic-version, anthropic-dangerous-direct-browser-access",
        },
    )
    response = connection.getresponse()
    assert response.status == 204
    assert response.getheader("Access-Control-Allow-Origin") == "*"
    assert "anthropic-dangerous-direct-browser-access" in response.getheader("Access-Control-Allow-Headers")
    assert "POST" in response.getheader("Access-Control-Allow-Methods")


def test_anthropic_from_a_browser_needs_the_direct_access_header(llm):
    body = {
        "model": "m",
        "max_tokens": 100,
        "stream": True,
        "messages": [{"role": "user", "content": PROMPT}],
    }
    headers = {"x-api-key": llm.api_key, "anthropic-version": "2023-06-01", "Origin": "http://127.0.0.1:9"}
    _, refused = post(llm, "/v1/messages", body, headers)
    assert refused.status == 401 and "anthropic-dangerous-direct-browser-access" in refused.read().decode()
    _, allowed = post(
        llm, "/v1/messages", body, {**headers, "anthropic-dangerous-direct-browser-access": "true"}
    )
    assert allowed.status == 200 and allowed.getheader("Access-Control-Allow-Origin") == "*"
    events = [(name, json.loads(data)) for name, data in sse_events(iter(allowed.readline, b""))]
    names = [name for name, _ in events]
    assert names[:3] == ["message_start", "content_block_start", "ping"] and names[-1] == "message_stop"
    deltas = [
        data["delta"]["text"] for _, data in events if data.get("delta", {}).get("type") == "text_delta"
    ]
    assert len(deltas) > 3 and "[arXiv:2005.11401 p.3 " in "".join(deltas)


def test_slow_stream_arrives_in_pieces_and_notices_a_hang_up(llm):
    llm.scenario = "slow"
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": PROMPT}]}
    connection, response = post(llm, "/v1/chat/completions", body, {"authorization": f"Bearer {llm.api_key}"})
    assert response.getheader("Transfer-Encoding") == "chunked"
    started = time.monotonic()
    first = response.readline()
    assert first.startswith(b"data: {")
    response.readline()
    response.readline()
    assert time.monotonic() - started >= 0.15  # the second event came a tick later
    response.close()
    connection.close()
    deadline = time.monotonic() + 5
    while not llm.requests[-1].aborted and time.monotonic() < deadline:
        time.sleep(0.05)
    assert llm.requests[-1].aborted
