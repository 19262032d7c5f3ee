"""Text normalisation shared by keyword terms and (later) request input.

NFKC folds full-width digits and letters into their ASCII forms (``１２３１５`` → ``12315``) and
case folding makes ``Refund`` and ``REFUND`` the same term. Pure Python, no Django.
"""

from __future__ import annotations

import unicodedata


def normalize_text(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().strip()


def normalize_term(term: str, match_mode: str) -> str:
    """How a keyword term is stored. Regular expressions are only trimmed: case folding would turn
    ``\\D`` into ``\\d``; the engine matches them case-insensitively against normalised input instead."""
    if match_mode == "regex":
        return term.strip()
    return normalize_text(term)
