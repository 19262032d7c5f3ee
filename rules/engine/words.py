"""Word-aware matching of CJK keywords: a hit counts only where a word segmenter puts word edges.

The segmenter is rjieba (jieba's dictionary and algorithm in Rust): ~14x faster than jieba on the same
sentences (bench/RESULTS.md, "Segmenters"), and pinned, since its dictionary is part of what a revision's
matching means. It only runs on a hit of a list in ``segmented`` mode, never on every request.
"""

from __future__ import annotations

import functools
from importlib.resources import files


@functools.cache
def _segmenter() -> object:
    import rjieba

    jieba = rjieba.Jieba()
    for line in files("rules.engine").joinpath("data", "segmenter_words.txt").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            jieba.add_word(line.strip(), None, None)
    return jieba


@functools.lru_cache(maxsize=16)
def word_edges(text: str) -> frozenset[int]:
    """The positions in ``text`` where the segmenter puts a word edge (0 and ``len(text)`` included).

    Cached: every hit of one message asks about the same text (a pure function of it)."""
    edges = {0}
    at = 0
    for word in _segmenter().cut(text, True):  # type: ignore[attr-defined]
        at += len(word)
        edges.add(at)
    return frozenset(edges)


def on_word_edges(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` begins and ends where words do (烟雾报警器: 报警 does not end on one).

    The whole text is segmented once: jieba's algorithm first cuts a text into blocks at spaces and
    punctuation, so a word never reaches across them and segmenting the whole costs what its clauses do."""
    edges = word_edges(text)
    return start in edges and end in edges


def is_word(text: str) -> bool:
    """Whether ``text`` is a word of the segmenter's dictionary (投宿 is; 头诉 is not)."""
    return bool(_segmenter().has_word(text))  # type: ignore[attr-defined]
