"""Whether a piece of a PDF's author block reads as a person's name, and TeX's spacing accents
joined to their letters: the heuristics `title_page` reads an author block with, kept apart from how
it finds that block on the page.

A name is two to five words, each capitalised (or a lower-case particle inside it, or initials),
with no digit, address or link, and none of the words an affiliation or a place is made of.
"""

from __future__ import annotations

import re
import unicodedata

BREAK = "\u2063"  # where a footnote marker or a wide gap was on the page: a name ends there
_MARKERS = "*∗†‡§¶‖♠♣♥♦⋆★☆♮♭♯∘◦•·⊗⊕⊙♢♡"
_MARKER_EDGES = re.compile(rf"^[\s{re.escape(_MARKERS)}\d,;:()]+|[\s{re.escape(_MARKERS)}\d,;:()]+$")
_SEPARATORS = re.compile(r"\s*(?:,|;|\band\b|&|\u2063)\s*")
# Lower-case words inside a name ("George van den Driessche", "Diego de las Casas").
_PARTICLES = set(
    "de van von der den da di del della la las los le du dos das bin ibn al el ter ten y zu".split()
)
# Words that mark an affiliation, a place or a note, never a person's name (checked case-folded).
_NOT_NAMES = set(
    """university universität université universidad universitat università univ institute institut
    instituto department dept school college laboratory laboratories lab labs research inc ltd llc corp
    corporation company co group center centre faculty academy google microsoft facebook meta deepmind
    openai amazon apple ibm nvidia baidu alibaba tencent huawei samsung intel adobe salesforce bytedance
    brain ai technology technologies science sciences engineering computer computing informatics
    mathematics physics street road avenue usa uk china canada france germany japan israel india korea
    switzerland netherlands italy spain australia singapore national foundation hospital abstract
    introduction preprint conference proceedings workshop submitted draft arxiv equal contribution
    correspondence email work done intern internship team project systems scholar fellow independent
    researcher new san santa gatos angeles mountain view lake city york arbor heights kingdom united states
    west uc mit cmu ucla epfl eth kaist cifar berkeley stanford cambridge oxford london paris beijing
    shanghai seattle toronto montreal redmond menlo palo alto zurich edinburgh tokyo amsterdam""".split()
)
_NAME_WORD = re.compile(r"[^\W\d_][\w'’.-]*", re.UNICODE)
_INITIALS = re.compile(r"(?:[^\W\d_]\.-?)+[^\W\d_]?\.?", re.UNICODE)


def split_names(text: str) -> list[str]:
    """The parts of an author line between commas, "and", "&" and BREAKs."""
    return _SEPARATORS.split(text)


def person_name(part: str) -> str | None:
    """`part` as a person's name (markers cut from its ends), None when it does not read as one."""
    part = _MARKER_EDGES.sub("", part).strip()
    if not part or "@" in part or "http" in part or any(c.isdigit() for c in part):
        return None
    words = part.split()
    if not 2 <= len(words) <= 5:
        return None
    for word in words:
        if word.casefold().strip(".") in _NOT_NAMES:
            return None
        if word in _PARTICLES or _INITIALS.fullmatch(word):
            continue
        if not _NAME_WORD.fullmatch(word) or not word[0].isupper():
            return None
    if words[-1] in _PARTICLES:
        return None
    return " ".join(words)


_ACCENTS = dict(
    zip(
        "´`¨˜ˆ^˚ˇ˘˙˝¯",
        "\u0301\u0300\u0308\u0303\u0302\u0302\u030a\u030c\u0306\u0307\u030b\u0304",
        strict=True,
    )
)
_ACCENT_BEFORE = re.compile("([" + re.escape("".join(_ACCENTS)) + "])\\s?([^\\W\\d_])")
_CEDILLA = re.compile(r"¸\s?([cCsStT])|([cCsStT])\s?¸")


def compose_accents(text: str) -> str:
    """TeX's spacing accents printed beside their letter ("Ren´e", "Lo¨ıc") as one letter (René, Loïc)."""
    if not any(accent in text for accent in (*_ACCENTS, "¸")):
        return text
    text = _ACCENT_BEFORE.sub(
        lambda m: unicodedata.normalize("NFC", m[2].replace("ı", "i") + _ACCENTS[m[1]]), text
    )
    return _CEDILLA.sub(lambda m: unicodedata.normalize("NFC", (m[1] or m[2]) + "\u0327"), text)
