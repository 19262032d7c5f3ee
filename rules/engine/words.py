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


# A keyword and a document suffix (起诉书, 起诉状, 投诉信, 投诉函) is one word to the segmenter, but writing or
# holding that document is the act itself (我已经准备好起诉书了)...
DOCUMENT_SUFFIXES = frozenset("书状信函")
# ...unless the next word asks for a blank form of it (起诉书模板, 投诉信范文): drafting help, not a threat.
# "How do I write one" (投诉信怎么写) is not among them: that is someone about to complain.
DRAFTING_WORDS = frozenset({"模板", "模版", "范本", "样本", "样板", "格式", "范文", "例文", "示例"})
# Part-of-speech tags of jieba's dictionary for a person's or a place's name (鲍静, 保靖).
NAME_TAGS = frozenset({"nr", "nrfg", "nrt", "ns"})


def _next_edge(edges: frozenset[int], at: int) -> int | None:
    later = [e for e in edges if e > at]
    return min(later) if later else None


def is_document(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` (a keyword not on word edges) begins a word that is the keyword and a
    document suffix, not followed by a word asking for a template of it (起诉书了: yes; 起诉书模板: no)."""
    edges = word_edges(text)
    after = _next_edge(edges, end)
    if start not in edges or after is None or text[end:after] not in DOCUMENT_SUFFIXES:
        return False
    following = _next_edge(edges, after)
    return following is None or text[after:following] not in DRAFTING_WORDS


@functools.lru_cache(maxsize=16)
def _name_spans(text: str) -> frozenset[tuple[int, int]]:
    spans = set()
    at = 0
    for word, tag in _segmenter().tag(text, True):  # type: ignore[attr-defined]
        if tag in NAME_TAGS:
            spans.add((at, at + len(word)))
        at += len(word)
    return frozenset(spans)


def is_name(text: str, start: int, end: int) -> bool:
    """Whether the segmenter reads ``text[start:end]`` as a name (收件人鲍静: 鲍静 is a person, not 报警)."""
    return (start, end) in _name_spans(text)


def is_word(text: str) -> bool:
    """Whether ``text`` is a word of the segmenter's dictionary (投宿 is; 头诉 is not)."""
    return bool(_segmenter().has_word(text))  # type: ignore[attr-defined]
