"""The core's folding rule for the corpus page's filter, which runs in the page without the core.

`author:oguz` finds Oğuz because the core folds accents (`analysis.fold`); the corpus table's filter
should agree, so the page gets the very table the core applies, less the mathematical letters no one
types into a filter box. wasm/runtime/fold.js applies it.
"""

from __future__ import annotations

from readingroom_core.analysis import FOLD_TABLE

_MATH_LETTERS = range(0x1D400, 0x1D800)  # 𝑥 𝐖 𝛼: in formulas, not in names or typed filters


def page_fold_table() -> dict[str, str]:
    """Every non-ASCII character the core folds, with its folded spelling (ASCII letters and digits)."""
    return {
        chr(code): folded
        for code, folded in sorted(FOLD_TABLE.items())
        if code > 0x7F and code not in _MATH_LETTERS
    }
