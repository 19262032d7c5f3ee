"""The durable backend: each point becomes one durable-rules ruleset, driven through its C API.

Each request is asserted as one fact in a session of its own; every rule whose pattern the fact
matches queues an action, the actions are drained (their names say which rule held) and the session
is deleted again, so no state survives a call. What durable-rules evaluates and what is prepared in
Python before the fact is asserted:

* keyword hits come from the shared pre-pass: bit *b* of ``mask`` becomes the field ``k<b>: true``.
  durable-rules' own regular expressions are never used (they give wrong answers);
* fact comparisons (``< <= > >= == !=``) are durable-rules alpha tests on the fact's value. What
  durable-rules cannot decide correctly itself (``in``, regular expressions) is computed in Python by
  the condition's own reference reading (``ConditionSpec.holds``) and sent as ``i<n>: true``;
* candidate, whitelist and session-state conditions are equality tests on the candidate and state.
  Texts are sent as ``"x" + hex(utf-8)`` so that no escaping quirk of the C JSON reader can matter
  (the encoding is injective, so equality is unchanged); a missing candidate or state is a missing
  field, and a test on a missing field never holds;
* time windows compare the local time of day (seconds, computed per zone in Python as the
  interpreter does); effective dates compare ``now`` as integer microseconds since the epoch.

Each kind of condition writes its own tests (``ConditionSpec.durable``) through ``_Translator``, which
lays out the fields. Every ``any`` rule and every in-list is spread into its alternatives (one durable-rules rule per
alternative, each a chain of ``$and`` tests) rather than written with ``$or``: measured here,
``$or`` branches are never shared between rules and overflow the matcher's stack with 65 rules.
Chains of identical tests are shared, like a trie.

durable-rules gives an answer only inside limits measured on this machine (2.0.28); beyond them it
errs (a full 64-entry stack: error 303; more than 254 fields: error 302; a test shared by more
than 256 rules: error 108; over 1,024 live sessions: MemoryError), hangs (a test with 512 or more
following tests), answers wrongly (texts of 65,535 bytes or more; integers beyond 2**53 against
fractional numbers) or crashes (deleting a session in which no rule held, or whose assertion
failed, frees an invalid pointer; hence a sentinel rule that always holds, and no clean-up after a
failure). ``durable_matcher`` refuses a point that could reach a limit with a ``CompileError``; at
request time a value durable-rules cannot represent exactly (a huge integer, NaN, a very long text,
a value of another type than the point compares with, anything the Python preparation cannot
handle) is decided by the reference interpreter instead, so the answer (or the exception) is always
the reference's. Should durable-rules fail anyway, the request raises ``DurableEngineError``.

Cost: a session allocates state for every rule of the ruleset, so a decision takes about 3x the
native backend's time at a few dozen rules and grows with the rule count (6x at 250 rules).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import logging
import math
import threading
import weakref
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import durable_rules_engine

from rules.engine.clock import time_of_day, zone
from rules.engine.compiler import CompileError, Matcher
from rules.engine.conditions.base import TRUE, Test
from rules.engine.interpreter import interpreted_matcher
from rules.engine.model import ConditionSpec, PointSpec, Request, RuleSpec

logger = logging.getLogger(__name__)

# Limits of durable-rules 2.0.28 as measured on this machine (see tests/rules/engine/test_durable.py).
MAX_PENDING_TESTS = 64  # the alpha matcher's fixed stack: error 303 beyond it
MAX_FOLLOWING_TESTS = 511  # a test's successors live in a 512-bucket open hash set: 512 hangs
MAX_RULES_PER_TEST = 256  # rules ending on one shared test: error 108 beyond it
MAX_FIELDS = 252  # 254 properties per fact, sid and id included: error 302 beyond it
MAX_TEXT = 32_000  # encoded text length; a value of 65,535 bytes or more compares wrongly
MAX_EXACT_INT = 2**53  # beyond it an integer is compared as a (rounded) double
MAX_ALTERNATIVES = 4096  # durable-rules rules per point; a guard against ``all``-of-``in`` blow-up

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICROSECOND = dt.timedelta(microseconds=1)
_ORDERING = {"<": "$lt", "<=": "$lte", ">": "$gt", ">=": "$gte"}

# One lock for every ruleset: the C library keeps a process-wide handle table, and a session must be
# asserted, drained and deleted without another thread's session in between.
_LOCK = threading.Lock()
# Rulesets of collected matchers, deleted the next time the lock is held (a finalizer may run while
# this thread holds the lock, so it must not take it itself).
_RETIRED: list[int] = []
_QUARANTINED: list[int] = []  # rulesets left as they are after a failure (see _DurableMatcher.__call__)
_SESSIONS = itertools.count(1)


class DurableEngineError(RuntimeError):
    """durable-rules failed on a request the compile-time guard let through (it should not happen)."""


class _Unsupported(Exception):
    """The request holds a value durable-rules cannot compare exactly; the reference decides it."""


def _json(test: Test) -> str:
    """One alpha test as durable-rules reads it."""
    if test.op == "==":
        return f'{{"{test.field}":{test.const}}}'
    name = {"!=": "$neq", "ex": "$ex"}.get(test.op) or _ORDERING[test.op]
    return f'{{"{name}":{{"{test.field}":{test.const}}}}}'


_MARK = Test("q", "==", "1")  # first test of every chain: the session's own state fact has no q
# A rule of the mark alone holds for every request. Measured here, deleting a session in which no rule
# held frees an invalid pointer (a crash, depending on the heap), so no session may end that way.
_SENTINEL = -1


def _djb2(name: str) -> int:
    # durable-rules finds a field by this 32-bit hash of its name, never by the name itself.
    h = 5381
    for byte in name.encode():
        h = (h * 33 + byte) & 0xFFFFFFFF
    return h


def _text(value: str) -> str:
    return '"x' + value.encode("utf-8", "surrogatepass").hex() + '"'


def _number(value: Any) -> str | None:
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


def _kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "text"
    return None


@dataclass
class _Layout:
    """The fields of the asserted fact, decided once per point."""

    lists: dict[int, str] = field(default_factory=dict)  # keyword bit -> field
    facts: dict[str, tuple[str, str]] = field(default_factory=dict)  # fact -> (field, kind)
    computed: dict[ConditionSpec, str] = field(default_factory=dict)  # condition decided in Python -> field
    zones: dict[str, str] = field(default_factory=dict)  # time zone -> field
    candidate: bool = False
    confidence: bool = False
    state: bool = False
    dated: bool = False

    def names(self) -> list[str]:
        names = [_MARK.field, *self.lists.values(), *self.computed.values(), *self.zones.values()]
        names += [name for name, _ in self.facts.values()]
        names += [n for n, used in (("c", self.candidate), ("cf", self.confidence), ("s", self.state)) if used]
        return [*names, "now"] if self.dated else names


class _Translator:
    """Conditions to alternatives: each alternative is a conjunction of tests (a list in DNF).

    Each condition writes its own alternatives (``ConditionSpec.durable``) with the fields laid out here.
    """

    def __init__(self, point: PointSpec) -> None:
        self._point = point
        self.layout = _Layout()

    @property
    def point(self) -> PointSpec:
        return self._point

    def fail(self, why: str) -> CompileError:
        return CompileError(f"durable backend: point {self._point.key}: {why}; use the native backend")

    def number(self, value: Any, what: str) -> str:
        text = _number(value)
        if text is None:
            raise self.fail(f"{what} {value!r} is not a number durable-rules compares exactly")
        return text

    def text(self, value: Any, what: str) -> str:
        if not isinstance(value, str):
            raise self.fail(f"{what} {value!r} is not a text")
        text = _text(value)
        if len(text) > MAX_TEXT:
            raise self.fail(f"{what} is longer than durable-rules compares correctly")
        return text

    def keyword_field(self, bit: int) -> str:
        return self.layout.lists.setdefault(bit, f"k{bit}")

    def compare_fact(self, fact: str, op: str, value: Any) -> Test:
        if op not in _ORDERING and op not in {"==", "!="}:
            raise self.fail(f"unknown operator {op!r}")
        kind = _kind(value)
        if kind is None or (op in _ORDERING and kind != "number"):
            raise self.fail(f"fact {fact} is compared ({op}) with {value!r}")
        name, known = self.layout.facts.setdefault(fact, (f"f{len(self.layout.facts)}", kind))
        if known != kind:
            raise self.fail(f"fact {fact} is compared with values of different types")
        if kind == "number":
            const = self.number(value, f"the value of fact {fact}")
        elif kind == "bool":
            const = TRUE if value else "false"
        else:
            const = self.text(value, f"the value of fact {fact}")
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
            dates.append(Test("now", ">=", str((rule.effective_from - _EPOCH) // _MICROSECOND)))
        if rule.effective_until is not None:
            dates.append(Test("now", "<", str((rule.effective_until - _EPOCH) // _MICROSECOND)))
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


@dataclass
class _Node:
    children: dict[Test, _Node] = field(default_factory=dict)
    ending: int = 0  # durable-rules rules whose chain ends here


def _true_at_once(tests: Iterable[Test]) -> int:
    """How many of these sibling tests can hold for one fact: one value per field, so equality tests
    on one field exclude each other (their constants differ); every other test may hold."""
    equalities: set[str] = set()
    others = 0
    for t in tests:
        if t.op == "==":
            equalities.add(t.field)
        else:
            others += 1
    return len(equalities) + others


def _tree_limits(root: _Node) -> tuple[int, int, int]:
    """(most tests on durable-rules' alpha stack at once, most successors of one test, most rules
    ending on one test).

    The alpha matcher walks the tests depth first with a stack: popping a test pushes those of its
    successors that hold, and a sibling waits on the stack while another sibling's subtree is
    walked. So at a test, the stack holds at most the waiting siblings of every test above it plus
    its own successors that hold.
    """
    pending = widest = ending = 0
    stack = [(root, 0)]  # iterative: a rule of a thousand conditions is a chain a thousand tests deep
    while stack:
        node, above = stack.pop()
        here = _true_at_once(node.children)
        pending = max(pending, above + here)
        widest = max(widest, len(node.children))
        ending = max(ending, node.ending)
        stack.extend((child, above + here - 1) for child in node.children.values())
    return pending, widest, ending


@dataclass
class _Slot:
    """The ruleset a matcher currently uses (replaced after a failure)."""

    handle: int


def _retire(slot: _Slot) -> None:
    _RETIRED.append(slot.handle)


def _delete_retired() -> None:
    # Called with _LOCK held.
    while _RETIRED:
        handle = _RETIRED.pop()
        try:
            durable_rules_engine.delete_ruleset(handle)
        except durable_rules_engine.error:
            logger.exception("durable backend: could not delete ruleset %s", handle)


class _DurableMatcher:
    """A ``Matcher`` over one durable-rules ruleset; safe to call from several threads."""

    def __init__(self, point: PointSpec, *, enforce_limits: bool = True) -> None:
        translator = _Translator(point)
        chains: list[tuple[int, tuple[Test, ...]]] = []
        for index, rule in enumerate(point.rules):
            chains += [(index, alternative) for alternative in translator.rule(rule)]
            if len(chains) > MAX_ALTERNATIVES:
                raise translator.fail(
                    f"its rules spread into more than {MAX_ALTERNATIVES} alternatives (all of several in-lists)"
                )
        layout = translator.layout
        names = layout.names()
        if len({_djb2(n) for n in [*names, "sid", "id"]}) != len(names) + 2:
            raise translator.fail("two fact fields share a durable-rules name hash")

        # Tests used by many alternatives go first, so that alternatives share the head of their chain.
        uses = Counter(t for _, alternative in chains for t in alternative)
        root = _Node()
        ordered: list[tuple[int, tuple[Test, ...]]] = [(_SENTINEL, ())]
        for index, alternative in chains:
            ordered.append((index, tuple(sorted(alternative, key=lambda t: (-uses[t], t)))))
        for _, alternative in ordered:
            node = root
            for t in (_MARK, *alternative):
                node = node.children.setdefault(t, _Node())
            node.ending += 1
        self.pending, widest, ending = _tree_limits(root)
        if enforce_limits:
            if self.pending > MAX_PENDING_TESTS:
                raise CompileError(
                    f"durable backend: point {point.key} has {self.pending} conditions that can hold at once, more "
                    f"than the {MAX_PENDING_TESTS} it can evaluate at once; use the native backend"
                )
            if widest > MAX_FOLLOWING_TESTS:
                raise translator.fail(
                    f"{widest} different tests follow one shared test, more than the {MAX_FOLLOWING_TESTS} "
                    "durable-rules can hold"
                )
            if ending > MAX_RULES_PER_TEST:
                raise translator.fail(
                    f"{ending} rules end on the same conditions, more than the {MAX_RULES_PER_TEST} "
                    "durable-rules can hold"
                )
            if len(names) > MAX_FIELDS:
                raise translator.fail(
                    f"it needs {len(names)} fact fields, more than the {MAX_FIELDS} durable-rules reads"
                )

        self._point_key = point.key
        self._layout = layout
        self._point = point
        self._reference = interpreted_matcher(point)
        self._rule_of: dict[str, int] = {}
        definitions: list[str] = []
        for number, (index, alternative) in enumerate(ordered):
            name = f"r{number}"
            self._rule_of[name] = index
            tests = [_json(_MARK), *(_json(t) for t in alternative)]
            body = tests[0] if len(tests) == 1 else '{"$and":[' + ",".join(tests) + "]}"
            definitions.append(f'"{name}":{{"all":[{{"m":{body}}}]}}')
        self._ruleset = "{" + ",".join(definitions) + "}"
        with _LOCK:
            _delete_retired()
            try:
                self._slot = _Slot(self._create())
            except durable_rules_engine.error as exc:
                raise translator.fail(f"durable-rules refused the ruleset ({exc})") from exc
        weakref.finalize(self, _retire, self._slot)

    def _create(self) -> int:
        # Called with _LOCK held.
        handle: int = durable_rules_engine.create_ruleset(f"arbiter.{self._point_key}", self._ruleset)
        return handle

    def _fact(
        self,
        mask: int,
        cand: str | None,
        conf: float | None,
        facts: Mapping[str, Any],
        state: str | None,
        now: dt.datetime,
    ) -> list[str]:
        """The request's fields as JSON members (``"name":value``); raises for anything not exact."""
        layout = self._layout
        members = [f'"{_MARK.field}":1']
        for bit, name in layout.lists.items():
            if mask >> bit & 1:
                members.append(f'"{name}":true')
        if layout.candidate and cand is not None:
            if not isinstance(cand, str) or len(text := _text(cand)) > MAX_TEXT:
                raise _Unsupported("candidate")
            members.append(f'"c":{text}')
            if layout.confidence and conf is not None:
                if (number := _number(conf)) is None:
                    raise _Unsupported("confidence")
                members.append(f'"cf":{number}')
        if layout.state and state is not None:
            if not isinstance(state, str) or len(text := _text(state)) > MAX_TEXT:
                raise _Unsupported("state")
            members.append(f'"s":{text}')
        for fact, (name, kind) in layout.facts.items():
            value = facts.get(fact)
            if value is None:
                continue  # a fact the request did not send: no test on it holds
            if _kind(value) != kind:
                raise _Unsupported(fact)
            if kind == "number":
                if (number := _number(value)) is None:
                    raise _Unsupported(fact)
                members.append(f'"{name}":{number}')
            elif kind == "bool":
                members.append(f'"{name}":{"true" if value else "false"}')
            else:
                if len(text := _text(value)) > MAX_TEXT:
                    raise _Unsupported(fact)
                members.append(f'"{name}":{text}')
        if layout.computed:
            request = Request(mask, cand, conf, facts, state, now)
            for c, name in layout.computed.items():
                if c.holds(self._point, request):
                    members.append(f'"{name}":true')
        for tz, name in layout.zones.items():
            members.append(f'"{name}":{time_of_day(now, tz)}')
        if layout.dated:
            members.append(f'"now":{(now - _EPOCH) // _MICROSECOND}')
        return members

    def __call__(
        self,
        mask: int,
        cand: str | None,
        conf: float | None,
        facts: Mapping[str, Any],
        state: str | None,
        now: dt.datetime,
    ) -> tuple[int, ...]:
        try:
            members = self._fact(mask, cand, conf, facts, state, now)
        except Exception as exc:
            logger.debug("durable backend: point %s decided by the reference (%r)", self._point_key, exc)
            return self._reference(mask, cand, conf, facts, state, now)
        held: set[int] = set()
        with _LOCK:
            _delete_retired()
            handle = self._slot.handle
            sid = str(next(_SESSIONS))
            message = '{"sid":"' + sid + '","id":"1",' + ",".join(members) + "}"
            try:
                code, offset = durable_rules_engine.assert_fact(handle, message)
                if code != 0:  # the sentinel always holds, so 1 (nothing held) is a failure too
                    raise DurableEngineError(f"assert_fact answered {code}")
                result = durable_rules_engine.start_action_for_state(handle, offset)
                action = result[1] if result else None
                while action:
                    held.add(self._rule_of[_action_name(action)])
                    action = durable_rules_engine.complete_and_start_action(handle, offset)
                durable_rules_engine.delete_state(handle, sid)
            except Exception as exc:
                # Measured: deleting a session whose assertion failed can crash the process, so the
                # session is left alone and its ruleset is never used (nor deleted) again.
                _QUARANTINED.append(handle)
                self._slot.handle = self._create()
                raise DurableEngineError(
                    f"durable backend: point {self._point_key}: durable-rules failed ({exc}); "
                    "the request went beyond a limit the compile-time guard did not foresee"
                ) from exc
        held.discard(_SENTINEL)
        return tuple(sorted(held))


def _action_name(action: str) -> str:
    # An action is '{"<rule name>":{"m":{...}}}'; rule names are plain ASCII (r0, r1, ...).
    if action.startswith('{"'):
        return action[2 : action.index('"', 2)]
    return str(next(iter(json.loads(action))))


def durable_matcher(point: PointSpec) -> Matcher:
    """Compile ``point`` into a durable-rules ruleset; raises ``CompileError`` beyond its limits."""
    return _DurableMatcher(point)
