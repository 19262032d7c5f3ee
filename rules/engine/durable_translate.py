"""The durable backend's translation: a point's rules as durable-rules tests, and request values as the
fields its facts hold. Pure; ``rules.engine.durable`` drives the C library with what this builds."""

from __future__ import annotations

import datetime as dt
import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from rules.engine.clock import zone
from rules.engine.compiler import CompileError
from rules.engine.conditions.base import TRUE, Test
from rules.engine.model import ConditionSpec, PointSpec, RuleSpec

MAX_PENDING_TESTS = 64  # the alpha matcher's fixed stack: error 303 beyond it
MAX_FOLLOWING_TESTS = 511  # a test's successors live in a 512-bucket open hash set: 512 hangs
MAX_RULES_PER_TEST = 256  # rules ending on one shared test: error 108 beyond it
MAX_FIELDS = 252  # 254 properties per fact, sid and id included: error 302 beyond it
MAX_TEXT = 32_000  # encoded text length; a value of 65,535 bytes or more compares wrongly
MAX_EXACT_INT = 2**53  # beyond it an integer is compared as a (rounded) double
MAX_ALTERNATIVES = 4096  # durable-rules rules per point; a guard against ``all``-of-``in`` blow-up

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
MICROSECOND = dt.timedelta(microseconds=1)
ORDERING = {"<": "$lt", "<=": "$lte", ">": "$gt", ">=": "$gte"}


class Unsupported(Exception):
    """The request holds a value durable-rules cannot compare exactly; the reference decides it."""


def test_json(test: Test) -> str:
    """One alpha test as durable-rules reads it."""
    if test.op == "==":
        return f'{{"{test.field}":{test.const}}}'
    name = {"!=": "$neq", "ex": "$ex"}.get(test.op) or ORDERING[test.op]
    return f'{{"{name}":{{"{test.field}":{test.const}}}}}'


MARK = Test("q", "==", "1")  # first test of every chain: the session's own state fact has no q
# A rule of the mark alone holds for every request. Measured here, deleting a session in which no rule
# held frees an invalid pointer (a crash, depending on the heap), so no session may end that way.
SENTINEL = -1


def djb2(name: str) -> int:
    # durable-rules finds a field by this 32-bit hash of its name, never by the name itself.
    h = 5381
    for byte in name.encode():
        h = (h * 33 + byte) & 0xFFFFFFFF
    return h


def encode_text(value: str) -> str:
    return '"x' + value.encode("utf-8", "surrogatepass").hex() + '"'


def encode_number(value: Any) -> str | None:
    """``value`` as a JSON number the C reader parses exactly, or None when that is impossible."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(int(value)) if -MAX_EXACT_INT <= value <= MAX_EXACT_INT else None
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        if value.is_integer() and -MAX_EXACT_INT <= value <= MAX_EXACT_INT:
            return str(int(value))  # one spelling per number, so equal constants share a test
        # The reader refuses exponents ("1e-05") and reads digits without a point as an integer.
        plain = format(Decimal(repr(float(value))), "f")
        return plain if "." in plain else plain + ".0"
    return None


def value_kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "text"
    return None


@dataclass
class Layout:
    """The fields of the asserted fact, decided once per point."""

    lists: dict[int, str] = field(default_factory=dict)  # keyword bit -> field
    facts: dict[str, tuple[str, str]] = field(default_factory=dict)  # fact -> (field, kind)
    session_fields: dict[str, tuple[str, str]] = field(default_factory=dict)  # session field -> (field, kind)
    computed: dict[ConditionSpec, str] = field(default_factory=dict)  # condition decided in Python -> field
    zones: dict[str, str] = field(default_factory=dict)  # time zone -> field
    candidate: bool = False
    confidence: bool = False
    state: bool = False
    dated: bool = False

    def names(self) -> list[str]:
        names = [MARK.field, *self.lists.values(), *self.computed.values(), *self.zones.values()]
        names += [name for name, _ in self.facts.values()]
        names += [name for name, _ in self.session_fields.values()]
        names += [n for n, used in (("c", self.candidate), ("cf", self.confidence), ("s", self.state)) if used]
        return [*names, "now"] if self.dated else names


class Translator:
    """Conditions to alternatives: each alternative is a conjunction of tests (a list in DNF).

    Each condition writes its own alternatives (``ConditionSpec.durable``) with the fields laid out here.
    """

    def __init__(self, point: PointSpec) -> None:
        self._point = point
        self.layout = Layout()

    @property
    def point(self) -> PointSpec:
        return self._point

    def fail(self, why: str) -> CompileError:
        return CompileError(f"durable backend: point {self._point.key}: {why}; use the native backend")

    def number(self, value: Any, what: str) -> str:
        text = encode_number(value)
        if text is None:
            raise self.fail(f"{what} {value!r} is not a number durable-rules compares exactly")
        return text

    def text(self, value: Any, what: str) -> str:
        if not isinstance(value, str):
            raise self.fail(f"{what} {value!r} is not a text")
        text = encode_text(value)
        if len(text) > MAX_TEXT:
            raise self.fail(f"{what} is longer than durable-rules compares correctly")
        return text

    def keyword_field(self, bit: int) -> str:
        return self.layout.lists.setdefault(bit, f"k{bit}")

    def compare_fact(self, fact: str, op: str, value: Any) -> Test:
        return self._compare(self.layout.facts, "f", f"fact {fact}", fact, op, value)

    def compare_session_field(self, name: str, op: str, value: Any) -> Test:
        return self._compare(self.layout.session_fields, "g", f"session field {name}", name, op, value)

    def _compare(
        self, fields: dict[str, tuple[str, str]], prefix: str, what: str, key: str, op: str, value: Any
    ) -> Test:
        if op not in ORDERING and op not in {"==", "!="}:
            raise self.fail(f"unknown operator {op!r}")
        kind = value_kind(value)
        if kind is None or (op in ORDERING and kind != "number"):
            raise self.fail(f"{what} is compared ({op}) with {value!r}")
        name, known = fields.setdefault(key, (f"{prefix}{len(fields)}", kind))
        if known != kind:
            raise self.fail(f"{what} is compared with values of different types")
        if kind == "number":
            const = self.number(value, f"the value of {what}")
        elif kind == "bool":
            const = TRUE if value else "false"
        else:
            const = self.text(value, f"the value of {what}")
        return Test(name, op, const)

    def candidate_field(self) -> str:
        self.layout.candidate = True
        return "c"

    def confidence_field(self) -> str:
        # A confidence is sent only with its candidate.
        self.layout.candidate = self.layout.confidence = True
        return "cf"

    def state_field(self) -> str:
        self.layout.state = True
        return "s"

    def time_of_day_field(self, tz: str) -> str:
        zone(tz)  # fail at compile time, not on a request, if the zone is unknown
        return self.layout.zones.setdefault(tz, f"t{len(self.layout.zones)}")

    def computed(self, condition: ConditionSpec) -> Test:
        name = self.layout.computed.setdefault(condition, f"i{len(self.layout.computed)}")
        return Test(name, "==", TRUE)

    def rule(self, rule: RuleSpec) -> list[tuple[Test, ...]]:
        dates: list[Test] = []
        if rule.effective_from is not None:
            dates.append(Test("now", ">=", str((rule.effective_from - EPOCH) // MICROSECOND)))
        if rule.effective_until is not None:
            dates.append(Test("now", "<", str((rule.effective_until - EPOCH) // MICROSECOND)))
        self.layout.dated = self.layout.dated or bool(dates)
        options = [c.durable(self) for c in rule.conditions]
        if not options:
            alternatives: Iterable[tuple[Test, ...]] = [()]  # a rule without conditions is a catch-all
        elif rule.combinator == "all":
            alternatives = (tuple(itertools.chain.from_iterable(parts)) for parts in itertools.product(*options))
        else:
            alternatives = itertools.chain.from_iterable(options)
        out: dict[frozenset[Test], None] = {}
        for alternative in alternatives:
            out.setdefault(frozenset((*dates, *alternative)), None)
            if len(out) > MAX_ALTERNATIVES:
                break
        return [tuple(a) for a in out]
