"""Hypothesis strategies: random but valid configurations, and requests that fit them."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import strategies as st

from rules.engine.conditions import KINDS

OUTCOMES = ["o1", "o2", "o3", "o4"]
STATES = ["s1", "s2", "s3"]
THRESHOLDS = {"t_low": 0.3, "t_mid": 0.65, "t_high": 100.0}
LISTS = {
    "l_cjk": ("substring", ["投诉", "退款", "12315", "媒体曝光"]),
    "l_word": ("word", ["refund", "cancel", "ab"]),
    "l_sub": ("substring", ["ab", "退", "x1"]),
    "l_re": ("regex", [r"\d{3}", r"^hi"]),
    "l_seg": ("segmented", ["报警", "police", "12315", "投诉"]),
}
# Every evasion option a list may have (rules.engine.evasion), drawn on or off per list.
OPTIONS = ("fold_traditional", "ignore_cjk_gaps", "decode_escapes", "ignore_invisible", "fold_variants")
OPTIONS += ("fold_confusables", "fold_digits", "bridge_cjk", "match_pinyin")
UNLESS = ["不是要投诉", "不想投诉", "refund", "报警器"]
FACTS = {"n": "number", "i": "integer", "s": "string", "b": "boolean", "tags": "string_list"}
# The fields of the machine "m" the drawn point moves (session_field conditions read them); "phone" is pii.
FIELDS = {
    "phone": "string",
    "retries": "integer",
    "score": "number",
    "ok": "boolean",
    "level": "enum",
    "seen_at": "datetime",
    "items": "array",
}
# With what the evasion options read through: fillers, an override, escapes, numerals, homophones, look-alikes.
ALPHABET = (
    "ab退款投诉12315xhi refundcancel媒体曝光"
    "ＲＥＦＵＮＤ１２３\u3164\u202e&#;%\\u一二幺١头苏抱警报器不是要没会，吗оᴘ0l.-、"
)
ZONES = ["UTC", "Asia/Shanghai", "America/New_York"]

number = st.one_of(
    st.integers(min_value=-1000, max_value=1000), st.floats(min_value=-1000, max_value=1000, allow_nan=False)
)
words = st.sampled_from(["x", "y", "z", "gold"])


def _hhmm(seconds: int) -> str:
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}"


@st.composite
def _fact_condition(draw: st.DrawFn) -> dict[str, Any]:
    fact = draw(st.sampled_from(sorted(FACTS)))
    typ = FACTS[fact]
    if typ in {"number", "integer"}:
        op = draw(st.sampled_from(["<", "<=", ">", ">=", "==", "!=", "in"]))
        if op == "in":
            return {"fact": fact, "op": op, "value": draw(st.lists(st.integers(-5, 5), min_size=1, max_size=3))}
        if draw(st.booleans()):
            return {"fact": fact, "op": op, "threshold": draw(st.sampled_from(sorted(THRESHOLDS)))}
        return {"fact": fact, "op": op, "value": draw(number)}
    if typ == "boolean":
        return {"fact": fact, "op": draw(st.sampled_from(["==", "!="])), "value": draw(st.booleans())}
    op = draw(st.sampled_from(["==", "!=", "in"]) if typ == "string" else st.just("in"))
    if op == "in":
        return {"fact": fact, "op": op, "value": draw(st.lists(words, min_size=1, max_size=3, unique=True))}
    return {"fact": fact, "op": op, "value": draw(words)}


@st.composite
def _time_window(draw: st.DrawFn) -> dict[str, Any]:
    start = draw(st.integers(0, 23 * 60)) * 60
    end = draw(st.integers(0, 23 * 60).filter(lambda m: m * 60 != start)) * 60
    return {"time_window": {"from": _hhmm(start), "to": _hhmm(end), "tz": draw(st.sampled_from(ZONES))}}


def _outcome_list(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda o: {kind: o}, st.lists(st.sampled_from(OUTCOMES), min_size=1, max_size=3, unique=True))


# One strategy per kind of condition, in the snapshot form. The property and differential tests draw
# conditions of every kind the engine registers (rules.engine.conditions.KINDS); test_strategies fails
# when a registered kind has no strategy here.
CONDITIONS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "input_contains": st.builds(
        lambda k, unless, negated: {
            "input_contains": k,
            **({"unless": unless} if unless else {}),
            **({"unless_negated": True} if negated else {}),
        },
        st.sampled_from(sorted(LISTS)),
        st.lists(st.sampled_from(UNLESS), max_size=2, unique=True),
        st.booleans(),
    ),
    "fact": _fact_condition(),
    "candidate_in": _outcome_list("candidate_in"),
    "candidate_not_in": _outcome_list("candidate_not_in"),
    "candidate_not_in_whitelist": st.just({"candidate_not_in_whitelist": True}),
    "candidate_confidence_below": st.builds(
        lambda t: {"candidate_confidence_below": t}, st.sampled_from(["t_low", "t_mid"])
    ),
    "time_window": _time_window(),
    "session_state_in": st.builds(
        lambda s: {"session_state_in": s}, st.lists(st.sampled_from(STATES), min_size=1, max_size=2, unique=True)
    ),
    # On the string fact, whose values are drawn from ``words``: case folding, anchors, a match anywhere.
    "fact_matches": st.builds(
        lambda p: {"fact_matches": {"fact": "s", "pattern": p}},
        st.sampled_from(["^g", "O", "^[XY]$", "z$", "GOLD", "^(x|gold)$", r"\w{2}"]),
    ),
}


@st.composite
def _session_field_condition(draw: st.DrawFn) -> dict[str, Any]:
    name = draw(st.sampled_from(sorted(FIELDS)))
    typ = FIELDS[name]
    if typ in {"number", "integer"}:
        op = draw(st.sampled_from(["<", "<=", ">", ">=", "==", "!=", "in"]))
        if op == "in":
            return {
                "session_field": name,
                "op": op,
                "value": draw(st.lists(st.integers(-5, 5), min_size=1, max_size=3)),
            }
        if draw(st.booleans()):
            return {"session_field": name, "op": op, "threshold": draw(st.sampled_from(sorted(THRESHOLDS)))}
        value = draw(st.integers(-10, 10) if typ == "integer" else number)
        return {"session_field": name, "op": op, "value": value}
    if typ == "boolean":
        return {"session_field": name, "op": draw(st.sampled_from(["==", "!="])), "value": draw(st.booleans())}
    if typ == "array":
        items = st.lists(st.one_of(words, st.integers(-5, 5)), min_size=1, max_size=3, unique=True)
        return {"session_field": name, "op": "in", "value": draw(items)}
    op = draw(st.sampled_from(["==", "!=", "in", "pattern"]))
    if op == "pattern":
        return {"session_field": name, "pattern": draw(st.sampled_from(["^1[3-9]", "O", "^[XY]$", "gold", r"\d{4}"]))}
    if op == "in":
        return {"session_field": name, "op": op, "value": draw(st.lists(words, min_size=1, max_size=3, unique=True))}
    return {"session_field": name, "op": op, "value": draw(words)}


CONDITIONS["session_field"] = _session_field_condition()
CONDITIONS["session_keyword_seen"] = st.builds(
    lambda k, n: {"session_keyword_seen": k, "last": n},
    st.sampled_from([*sorted(LISTS), "elsewhere"]),
    st.integers(1, 6),
)


def condition() -> st.SearchStrategy[dict[str, Any]]:
    """A condition of any registered kind."""
    return st.one_of([CONDITIONS[kind] for kind in sorted(KINDS) if kind in CONDITIONS])


@st.composite
def snapshot(draw: st.DrawFn, *, max_rules: int = 12) -> dict[str, Any]:
    n = draw(st.integers(0, max_rules))
    rules = []
    for i in range(n):
        rule: dict[str, Any] = {
            "key": f"r{i}",
            "priority": draw(st.integers(0, 5)),
            "category": draw(st.sampled_from(["compliance", "risk", "business", "quality"])),
            "match": draw(st.sampled_from(["all", "any"])),
            "mode": draw(st.sampled_from(["enforce", "enforce", "shadow", "off"])),
            "outcome": draw(st.sampled_from(OUTCOMES)),
            "conditions": draw(st.lists(condition(), min_size=0, max_size=4)),
        }
        if draw(st.integers(0, 4)) == 0:
            rule["effective_from"] = "2026-06-01T00:00:00Z"
        if draw(st.integers(0, 4)) == 0:
            rule["effective_until"] = "2027-01-01T00:00:00Z"
        rules.append(rule)
    return {
        "version": 1,
        "thresholds": [{"key": k, "value": v} for k, v in THRESHOLDS.items()],
        "keyword_lists": [
            {"key": k, "match": m, "terms": t, **{o: draw(st.booleans()) for o in OPTIONS}}
            for k, (m, t) in LISTS.items()
        ],
        "points": [
            {
                "key": "p",
                "facts": dict(FACTS),
                "outcomes": list(OUTCOMES),
                "candidate_whitelist": draw(st.lists(st.sampled_from(OUTCOMES), max_size=3, unique=True)),
                "default_outcome": draw(st.sampled_from(OUTCOMES)),
                "when_no_candidate": draw(st.sampled_from(["ask", "default"])),
                "machine": "m",
                "rules": rules,
            }
        ],
        "machines": [
            {
                "key": "m",
                "fields": [
                    {"name": name, "type": typ, **({"pii": True} if name == "phone" else {})}
                    for name, typ in FIELDS.items()
                ],
            }
        ],
    }


@st.composite
def facts(draw: st.DrawFn) -> dict[str, Any]:
    """Any subset of the declared facts, each of its declared type."""
    values = {
        "n": number,
        "i": st.integers(-10, 10),
        "s": words,
        "b": st.booleans(),
        "tags": st.lists(words, max_size=3),
    }
    chosen = draw(st.lists(st.sampled_from(sorted(FACTS)), unique=True))
    return {name: draw(values[name]) for name in chosen}


_FIELD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "phone": st.one_of(words, st.sampled_from(["13800138000", "12345", "x1380"])),
    "retries": st.integers(-10, 10),
    "score": number,
    "ok": st.booleans(),
    "level": words,
    "seen_at": st.sampled_from(["2026-11-30T12:00:00+00:00", "gold"]),
    "items": st.lists(st.one_of(words, st.integers(-5, 5)), max_size=3),
}
_RECENT = st.lists(st.frozensets(st.sampled_from([*sorted(LISTS), "elsewhere"]), max_size=3), max_size=8)


@st.composite
def sessions(draw: st.DrawFn, *, wild: bool = False) -> Any:
    """What rules read of a session: any subset of the machine's fields, each of its declared type (``wild``:
    of any type at all — a declaration changed since the value was set), and the lists of its latest decisions."""
    from rules.engine.request import SessionView

    chosen = draw(st.lists(st.sampled_from(sorted(FIELDS)), unique=True))
    fields = {name: draw(wild_values if wild else _FIELD_VALUES[name]) for name in chosen}
    return SessionView(fields, tuple(draw(_RECENT)))


candidates = st.one_of(
    st.none(),
    st.tuples(
        st.sampled_from([*OUTCOMES, "stray"]),
        st.sampled_from([0.0, 0.3, 0.2999, 0.65, 0.6499, 1.0]) | st.floats(0, 1),
    ),
)
texts = st.text(alphabet=ALPHABET, max_size=40)
moments = st.datetimes(
    min_value=dt.datetime(2026, 1, 1), max_value=dt.datetime(2027, 12, 31), timezones=st.just(dt.UTC)
)
states = st.one_of(st.none(), st.sampled_from(STATES))

# Beyond the declared types: values a backend might misread (huge integers, NaN, texts with quotes,
# escapes and NUL, wrong types). The reference interpreter decides what they mean, or raises.
odd_texts = st.one_of(
    words,
    st.sampled_from(["", '"', "\\", '\\"', "o1\x00", "退款", "x" * 70_000]),
    st.text(max_size=12),
)
wild_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**53, 2**53 + 1, -(2**53) - 1, 2**63, 10**30]),
    st.floats(),
    odd_texts,
    st.lists(st.one_of(words, st.integers(-5, 5)), max_size=3),
)


@st.composite
def wild_facts(draw: st.DrawFn) -> dict[str, Any]:
    """Any subset of the declared facts, each of any type at all."""
    chosen = draw(st.lists(st.sampled_from(sorted(FACTS)), unique=True))
    return {name: draw(wild_values) for name in chosen}


wild_candidates = st.one_of(
    candidates,
    st.tuples(odd_texts, st.one_of(st.floats(), st.integers(-2, 2), st.booleans())),
)
wild_states = st.one_of(states, odd_texts)
