"""Section headings found among the paragraphs (precision over recall: numbered, known or styled
headings), their levels, and the bibliography's span, which chunking leaves out."""

from __future__ import annotations

import re

from builder.models import Section
from builder.stages.parse.paragraphs import Paragraph, heading_styled

_NUMBERED = re.compile(
    r"^(?P<num>\d{1,2}(?:\.\d{1,2}){0,3}|[A-Z](?:\.\d{1,2}){0,3}|[IVX]{1,5}(?=\.))\.?\s+(?P<title>\S.*)$"
)
_KNOWN = re.compile(
    r"^(?:abstract|introduction|related work|background|conclusions?|discussion|references|bibliography|"
    r"literature cited|acknowledg(?:e)?ments?|appendix|appendices|limitations|ethics statement|"
    r"broader impacts?|supplementary materials?|impact statement)$",
    re.IGNORECASE,
)
_APPENDIX = re.compile(r"^appendix\s+[A-Z]\b", re.IGNORECASE)
_REFERENCES = re.compile(
    r"^(?:references|bibliography|literature cited|references and notes)$", re.IGNORECASE
)
_NOT_HEADING_START = re.compile(r"^(?:figure|fig\.|table|algorithm|listing|equation)\b", re.IGNORECASE)
_MAX_HEADING_WORDS = 14
_TRAILING_PAGE_NUMBER = re.compile(r"\s\d+$")
_ROMAN_SECTION = re.compile(r"^[IVX]{1,5}\.\s")


def find_sections(placed: list[tuple[int, Paragraph]], body_size: float) -> list[Section]:
    sections: list[Section] = []
    for page, paragraph in placed:
        found = _heading(paragraph, body_size, sections)
        if found and (sections or _opens_paper(found[0])):
            sections.append(Section(title=found[0], start=paragraph.start, page=page, level=found[1]))
    return sections


def _opens_paper(title: str) -> bool:
    """The first heading is the abstract or the first section; bold affiliations above it are not."""
    numbered = _NUMBERED.match(title)
    if numbered:
        return numbered["num"].rstrip(".") in ("1", "I") or _KNOWN.match(numbered["title"]) is not None
    return _KNOWN.match(title) is not None


def _heading(paragraph: Paragraph, body_size: float, earlier: list[Section]) -> tuple[str, int] | None:
    """(title, level) when the paragraph is a section heading; precision over recall."""
    text = paragraph.text.rstrip(".: ")
    lines = paragraph.lines
    words = text.split()
    if not words or len(lines) > 2 or len(words) > _MAX_HEADING_WORDS or _NOT_HEADING_START.match(text):
        return None
    styled = all(heading_styled(line, body_size) for line in lines)
    bare = _NUMBERED.sub(r"\g<title>", text) if _NUMBERED.match(text) else text
    if _KNOWN.match(bare) and (styled or bare.isupper() or _REFERENCES.match(bare) or bare == "Abstract"):
        return text, _level(text, earlier)
    if _APPENDIX.match(text) and styled:
        return text, 1
    numbered = _NUMBERED.match(text)
    if numbered and _plausible_numbered(numbered, styled, earlier):
        return text, _level(text, earlier)
    larger = all(line.size >= body_size + 1.0 and line.bold for line in lines)
    if (
        larger
        and paragraph.flush_left
        and not numbered
        and earlier
        and words[0][0].isupper()
        and len(text) >= 4
        and not any(ch in text for ch in "@,")
        and sum(ch.isalpha() for ch in text) >= 0.7 * len(text.replace(" ", ""))
    ):
        return text, 1
    return None


def _plausible_numbered(match: re.Match[str], styled: bool, earlier: list[Section]) -> bool:
    number, title = match["num"], match["title"]
    if not title[0].isalpha() or sum(ch.isalpha() for ch in title) < 0.6 * len(title.replace(" ", "")):
        return False
    first_word = title.split()[0]
    if (
        _TRAILING_PAGE_NUMBER.search(title)
        or not title[0].isupper()
        or any(ch.isdigit() for ch in first_word)
    ):
        return False  # table-of-contents lines, list items, figure labels such as "C T1 T[SEP]"
    # all-caps headings (ICLR small caps, IEEE "IV. RESULTS") often carry no bold or size cue
    cued = styled or (title.isupper() and len(title) >= 6)
    if number[0].isdigit():
        return cued and int(number.split(".")[0]) <= 30
    if all(ch in "IVX" for ch in number):
        return cued
    # A letter number ("A Appendix", "B.2 Details") reads like an article ("A Simple Method") unless
    # the body sections came first; under roman sections "A. Setup" is a subsection.
    after_body = any(s.title[0].isdigit() or _REFERENCES.match(s.title) for s in earlier)
    return cued and (after_body or (_under_roman_sections(earlier) and match[0][len(number)] == "."))


def _under_roman_sections(earlier: list[Section]) -> bool:
    """IEEE-style papers number sections I, II, ... and their subsections A, B, ..."""
    return any(_ROMAN_SECTION.match(s.title) for s in earlier) and not any(
        _REFERENCES.match(s.title) for s in earlier
    )


def _level(title: str, earlier: list[Section]) -> int:
    match = _NUMBERED.match(title)
    if not match or all(ch in "IVX" for ch in match["num"]):
        return 1
    number = match["num"]
    if number[0].isalpha() and _under_roman_sections(earlier):
        return 2 + number.count(".")
    return number.count(".") + 1


def find_references(sections: list[Section], text_length: int) -> tuple[int, int] | None:
    """The bibliography's span (its heading to the next heading or the end), kept out of the chunks."""
    for index, section in enumerate(sections):
        bare = _NUMBERED.sub(r"\g<title>", section.title) if _NUMBERED.match(section.title) else section.title
        if _REFERENCES.match(bare.rstrip(".: ")):
            end = sections[index + 1].start - 2 if index + 1 < len(sections) else text_length
            return section.start, end
    return None
