"""What the CLI's Ask tests share: the key, the question, the providers, and where each API's client points
at the mock provider (tests/support/mock_llm.py).
"""

from support.mock_llm import MockLLM

KEY = "sk-test-7f3a9c1e"
QUESTION = "How many predicted queries does doc2query append to each document, and how are they decoded?"
PROVIDERS = ("openai", "anthropic", "gemini")


def base_url(llm: MockLLM, provider: str) -> str:
    return f"{llm.base_url}/v1" if provider == "openai" else llm.base_url
