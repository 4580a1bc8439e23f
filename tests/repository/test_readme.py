"""The README is a newcomer's path: it documents every corpus setting and every command and option.

The lists come from the code (the settings dataclasses and the argparse parser), so a new setting or
option without a line in the README (and in docs/cli.md, the full reference) fails here. The README
stays a user's guide of at most 3,000 words; the internals live in docs/ pages, one topic each, which
the README links.
"""

import argparse
import re
from dataclasses import fields

from support.narration import NARRATED_FIGURE

from builder import config
from builder.cli import make_parser
from builder.models import Publish, Settings
from builder.paths import BASE_URL_ENV, MIRROR_ENV, REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"
CLI_REFERENCE = DOCS / "cli.md"
MEASUREMENTS = DOCS / "measurements.md"  # generated from docs/measurements/*.json
SCREENSHOT = DOCS / "screenshot.png"
MOST_WORDS = 3000


def readme() -> str:
    return README.read_text(encoding="utf-8")


def docs_pages() -> list:
    """The hand-written docs pages (the measurements page is generated)."""
    return [page for page in sorted(DOCS.glob("*.md")) if page != MEASUREMENTS]


def corpus_settings() -> dict[str, set[str]]:
    return {
        "[site]": {f.name for f in fields(Settings)},
        "[publish]": {f.name for f in fields(Publish)},
        "[[paper]]": set(config.PAPER_KEYS),
    }


def cli_surface() -> dict[str, set[str]]:
    """Every command and the long options it takes (hidden test-only options left out)."""
    parser = make_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    surface = {}
    for name, command in commands.choices.items():
        surface[name] = {
            option
            for action in command._actions
            if action.help != argparse.SUPPRESS
            for option in action.option_strings
            if option.startswith("--") and option != "--help"
        }
    return surface


def undocumented_settings(text: str) -> list[str]:
    return [
        f"{table} {name}"
        for table, names in corpus_settings().items()
        for name in sorted(names)
        if f"`{name}`" not in text
    ]


def undocumented_cli(text: str) -> list[str]:
    missing = []
    for command, options in cli_surface().items():
        if f"`python -m builder {command}" not in text:
            missing.append(f"python -m builder {command}")
        missing += [
            f"{command} {option}" for option in sorted(options) if not re.search(rf"{option}\b", text)
        ]
    return missing


def test_every_corpus_setting_is_documented():
    assert undocumented_settings(readme()) == []


def test_every_command_and_option_is_documented():
    assert undocumented_cli(readme()) == []


def test_the_command_reference_documents_every_command_and_option():
    assert undocumented_cli(CLI_REFERENCE.read_text(encoding="utf-8")) == []
    assert "](docs/cli.md)" in readme()


def test_the_readme_is_a_guide_and_links_every_docs_page():
    words = len(readme().split())
    assert words <= MOST_WORDS, f"README.md has {words} words"
    unlinked = [page.name for page in docs_pages() if f"](docs/{page.name}" not in readme()]
    assert unlinked == []
    assert "](docs/measurements.md)" in readme()


def test_the_checks_notice_what_is_missing():
    text = readme()
    assert undocumented_settings(text.replace("`document_prefix`", "document prefix")) == [
        "[site] document_prefix"
    ]
    assert "serve --port" in undocumented_cli(text.replace("--port", "--p0rt"))
    assert "python -m builder stats" in undocumented_cli(text.replace("`python -m builder stats`", "stats"))


def test_the_two_commands_and_the_environment():
    text = readme()
    code = [line.strip() for line in text.splitlines() if line.startswith("    ")]
    assert "pip install nox && nox -s build" in code
    assert "pip install nox && nox -s tests" in code
    for variable in (BASE_URL_ENV, MIRROR_ENV, "READINGROOM_REFRESH", "TORCH_INDEX_URL"):
        assert variable in text


def test_the_newcomer_sections_are_there():
    headings = re.findall(r"^## (.+)$", readme(), flags=re.M)
    for heading in (
        "The two commands",
        "Publish your own list",
        "The corpus file",
        "Commands",
        "Answers with your own LLM key",
        "Privacy",
        "Troubleshooting",
    ):
        assert heading in headings
    for problem in ("rate limits", "fails to parse", "large list", "sub-path"):
        assert re.search(rf"^\*\*[^*]*{problem}", readme(), flags=re.M | re.I), problem


def test_the_screenshot_is_committed_and_embedded():
    assert "](docs/screenshot.png)" in readme()
    data = SCREENSHOT.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1100, 760)
    assert 20_000 < len(data) < 400_000  # a real page, and small enough for the repository


def test_measured_figures_live_in_the_generated_page():
    """The README and the docs pages link to docs/measurements.md (written by the benches) instead of
    narrating numbers; a page that names a benchmark links to where its figures are."""
    text = readme()
    assert "](docs/measurements.md)" in text
    assert MEASUREMENTS.is_file()
    assert NARRATED_FIGURE.findall(text) == []
    for page in docs_pages():
        page_text = page.read_text(encoding="utf-8")
        assert NARRATED_FIGURE.findall(page_text) == [], page.name
        if "scripts/bench_" in page_text:
            assert "](measurements.md)" in page_text, page.name


def test_the_narration_check_notices_before_and_after_figures():
    for narration in (
        "14.3 MB (was 16.39)",
        "35.1 ms at the median (35.5-38.4 ms before)",
        "the first semantic result from 14.9 s to 14.0 s",
        "sends 30.9 MB instead of 61.0 MB",
        "the postings file is 19.8 -> 15.4 MB",
        "a hybrid query 245-259 -> 93-100 ms",
        "recall@10 0.950 → 0.942",
    ):
        assert NARRATED_FIGURE.search(narration), narration
    for description in ("1706.03762 -> 2017-06", "hep-th/9901001 -> 1999-01", "(0 before any)", "v2 -> v3"):
        assert not NARRATED_FIGURE.search(description), description
