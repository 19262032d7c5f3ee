"""The keyword scanner Arbiter used before daachorse, kept to measure the two side by side.

``PyAhoScanner`` is the earlier ``KeywordScanner`` for plain terms: a pyahocorasick automaton fed the UTF-8
bytes of the input spelled as a latin-1 ``str`` (one symbol per byte, which measured far faster than feeding
the ``str`` itself with thousands of CJK first characters). Regex lists are left out: both scanners handle
them the same way, with ``re``.
"""

from __future__ import annotations

from collections.abc import Sequence

import ahocorasick

from rules.engine.keywords import KeywordListSpec
from rules.engine.normalize import normalize_text

_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_")


def _as_bytes_str(text: str) -> str:
    return text.encode("utf-8", "surrogatepass").decode("latin-1")


class PyAhoScanner:
    def __init__(self, lists: Sequence[KeywordListSpec]) -> None:
        entries: dict[str, list[tuple[int, bool, str]]] = {}
        for bit, kl in enumerate(lists):
            if kl.match == "regex":
                continue
            for term in kl.terms:
                norm = normalize_text(term)
                if norm:
                    entries.setdefault(_as_bytes_str(norm), []).append((bit, kl.match == "word", norm))
        automaton = ahocorasick.Automaton()
        for key, hits in entries.items():
            automaton.add_word(key, (len(key), tuple(hits)))
        automaton.make_automaton()
        self._automaton = automaton

    def scan(self, normalized: str) -> tuple[int, dict[int, list[str]]]:
        mask = 0
        found: dict[int, list[str]] = {}
        if not normalized:
            return mask, found
        data = _as_bytes_str(normalized)
        last = len(data) - 1
        for end, (length, hits) in self._automaton.iter(data):
            start = end - length + 1
            for bit, whole_word, term in hits:
                if whole_word and (
                    (start > 0 and ord(data[start - 1]) in _WORD_BYTES)
                    or (end < last and ord(data[end + 1]) in _WORD_BYTES)
                ):
                    continue
                mask |= 1 << bit
                terms = found.setdefault(bit, [])
                if term not in terms:
                    terms.append(term)
        return mask, found
