"""The keyword scanner against a plain-Python oracle: same lists hit, same terms, same order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rules.engine.keywords import KeywordListSpec, KeywordScanner
from rules.engine.normalize import normalize_text

# Few symbols, so that terms overlap, nest and repeat across lists; full-width and upper-case forms
# exercise normalisation; the emoji and the lone surrogate exercise positions past the BMP and input
# that cannot be encoded.
SYMBOLS = ["a", "b", "A", "Ｂ", " ", "_", "1", "１", "投", "诉", "退", "款", "é", "\U0001f600", "\ud800"]
term = st.text(alphabet=st.sampled_from(SYMBOLS), min_size=1, max_size=4)
keyword_list = st.tuples(st.sampled_from(["substring", "word"]), st.lists(term, min_size=0, max_size=6))
WORD = set("abcdefghijklmnopqrstuvwxyz0123456789_")


def oracle(lists: list[KeywordListSpec], text: str) -> tuple[int, dict[int, list[str]]]:
    """Every occurrence of every term, in order of where it ends (longest first at the same end)."""
    occurrences: list[tuple[int, int, int, str]] = []
    for bit, kl in enumerate(lists):
        for raw in kl.terms:
            t = normalize_text(raw)
            if not t:
                continue
            start = text.find(t)
            while start != -1:
                end = start + len(t)
                bounded = (start == 0 or text[start - 1] not in WORD) and (end == len(text) or text[end] not in WORD)
                if kl.match == "substring" or bounded:
                    occurrences.append((end, -len(t), bit, t))
                start = text.find(t, start + 1)
    mask, found = 0, {}
    for _end, _neg, bit, t in sorted(occurrences, key=lambda o: (o[0], o[1])):
        mask |= 1 << bit
        terms = found.setdefault(bit, [])
        if t not in terms:
            terms.append(t)
    return mask, found


@settings(max_examples=400, deadline=None)
@given(st.lists(keyword_list, max_size=5), st.text(alphabet=st.sampled_from(SYMBOLS), max_size=40))
def test_the_scanner_finds_exactly_what_a_plain_search_finds(raw_lists, raw_text):
    lists = [KeywordListSpec(key=f"l{i}", match=m, terms=tuple(ts)) for i, (m, ts) in enumerate(raw_lists)]
    scanner = KeywordScanner(lists)
    text = normalize_text(raw_text)
    mask, found = scanner.scan(text)
    want_mask, want_found = oracle(lists, text)
    assert mask == want_mask
    # Within a list, terms are listed in the order they were first seen; a term in two lists is in both.
    assert {bit: sorted(ts) for bit, ts in found.items()} == {bit: sorted(ts) for bit, ts in want_found.items()}
    for bit, terms in found.items():
        assert terms == want_found[bit]


def test_a_term_in_two_lists_hits_both_and_word_mode_only_where_bounded():
    lists = [
        KeywordListSpec(key="sub", match="substring", terms=("refund", "投诉")),
        KeywordListSpec(key="word", match="word", terms=("refund", "投诉")),
    ]
    scanner = KeywordScanner(lists)
    assert scanner.scan(normalize_text("REFUNDS please")) == (0b01, {0: ["refund"]})
    assert scanner.scan(normalize_text("Ｒｅｆｕｎｄ, 我要投诉")) == (
        0b11,
        {0: ["refund", "投诉"], 1: ["refund", "投诉"]},
    )
    assert scanner.named_hits(scanner.scan(normalize_text("投诉"))[1]) == {"sub": ("投诉",), "word": ("投诉",)}


def test_input_with_a_lone_surrogate_is_scanned_not_refused():
    scanner = KeywordScanner([KeywordListSpec(key="k", match="substring", terms=("投诉",))])
    assert scanner.scan("\ud800投诉") == (1, {0: ["投诉"]})
