"""Text normalisation shared by keyword terms and (later) request input.

NFKC folds full-width digits and letters into their ASCII forms (``１２３１５`` → ``12315``) and
case folding makes ``Refund`` and ``REFUND`` the same term. Pure Python, no Django.
"""

from __future__ import annotations

import unicodedata


def normalize_text(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().strip()
