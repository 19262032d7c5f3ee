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

Each kind of condition writes its own tests (``ConditionSpec.durable``) through ``Translator``, which
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
import threading
import weakref
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import durable_rules_engine

from rules.engine.clock import time_of_day
from rules.engine.compiler import CompileError, Matcher
from rules.engine.conditions.base import Test
from rules.engine.durable_translate import (
    EPOCH,
    MARK,
    MAX_ALTERNATIVES,
    MAX_FIELDS,
    MAX_FOLLOWING_TESTS,
    MAX_PENDING_TESTS,
    MAX_RULES_PER_TEST,
    MAX_TEXT,
    MICROSECOND,
    SENTINEL,
    Translator,
    Unsupported,
    djb2,
    encode_number,
    encode_text,
    test_json,
    value_kind,
)
from rules.engine.interpreter import interpreted_matcher
from rules.engine.model import PointSpec, Request
from rules.engine.request import NO_SESSION, SessionView

logger = logging.getLogger(__name__)

# Limits of durable-rules 2.0.28 as measured on this machine (see tests/rules/engine/test_durable.py).
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
        translator = Translator(point)
        chains: list[tuple[int, tuple[Test, ...]]] = []
        for index, rule in enumerate(point.rules):
            chains += [(index, alternative) for alternative in translator.rule(rule)]
            if len(chains) > MAX_ALTERNATIVES:
                raise translator.fail(
                    f"its rules spread into more than {MAX_ALTERNATIVES} alternatives (all of several in-lists)"
                )
        layout = translator.layout
        names = layout.names()
        if len({djb2(n) for n in [*names, "sid", "id"]}) != len(names) + 2:
            raise translator.fail("two fact fields share a durable-rules name hash")

        # Tests used by many alternatives go first, so that alternatives share the head of their chain.
        uses = Counter(t for _, alternative in chains for t in alternative)
        root = _Node()
        ordered: list[tuple[int, tuple[Test, ...]]] = [(SENTINEL, ())]
        for index, alternative in chains:
            ordered.append((index, tuple(sorted(alternative, key=lambda t: (-uses[t], t)))))
        for _, alternative in ordered:
            node = root
            for t in (MARK, *alternative):
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
            tests = [test_json(MARK), *(test_json(t) for t in alternative)]
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
        session: SessionView,
    ) -> list[str]:
        """The request's fields as JSON members (``"name":value``); raises for anything not exact."""
        layout = self._layout
        members = [f'"{MARK.field}":1']
        for bit, name in layout.lists.items():
            if mask >> bit & 1:
                members.append(f'"{name}":true')
        if layout.candidate and cand is not None:
            if not isinstance(cand, str) or len(text := encode_text(cand)) > MAX_TEXT:
                raise Unsupported("candidate")
            members.append(f'"c":{text}')
            if layout.confidence and conf is not None:
                if (number := encode_number(conf)) is None:
                    raise Unsupported("confidence")
                members.append(f'"cf":{number}')
        if layout.state and state is not None:
            if not isinstance(state, str) or len(text := encode_text(state)) > MAX_TEXT:
                raise Unsupported("state")
            members.append(f'"s":{text}')
        for fact, (name, kind) in layout.facts.items():
            value = facts.get(fact)
            if value is None:
                continue  # a fact the request did not send: no test on it holds
            if value_kind(value) != kind:
                raise Unsupported(fact)
            if kind == "number":
                if (number := encode_number(value)) is None:
                    raise Unsupported(fact)
                members.append(f'"{name}":{number}')
            elif kind == "bool":
                members.append(f'"{name}":{"true" if value else "false"}')
            else:
                if len(text := encode_text(value)) > MAX_TEXT:
                    raise Unsupported(fact)
                members.append(f'"{name}":{text}')
        for field_name, (name, kind) in layout.session_fields.items():
            value = session.fields.get(field_name)
            if value is None or value_kind(value) != kind:
                continue  # not held, or not of the type compared with: no test on it holds (as ``holds``)
            if kind == "number":
                if (number := encode_number(value)) is None:
                    raise Unsupported(field_name)
                members.append(f'"{name}":{number}')
            elif kind == "bool":
                members.append(f'"{name}":{"true" if value else "false"}')
            else:
                if len(text := encode_text(value)) > MAX_TEXT:
                    raise Unsupported(field_name)
                members.append(f'"{name}":{text}')
        if layout.computed:
            request = Request(mask, cand, conf, facts, state, now, session)
            for c, name in layout.computed.items():
                if c.holds(self._point, request):
                    members.append(f'"{name}":true')
        for tz, name in layout.zones.items():
            members.append(f'"{name}":{time_of_day(now, tz)}')
        if layout.dated:
            members.append(f'"now":{(now - EPOCH) // MICROSECOND}')
        return members

    def __call__(
        self,
        mask: int,
        cand: str | None,
        conf: float | None,
        facts: Mapping[str, Any],
        state: str | None,
        now: dt.datetime,
        session: SessionView = NO_SESSION,
    ) -> tuple[int, ...]:
        try:
            members = self._fact(mask, cand, conf, facts, state, now, session)
        except Exception as exc:
            logger.debug("durable backend: point %s decided by the reference (%r)", self._point_key, exc)
            return self._reference(mask, cand, conf, facts, state, now, session)
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
        held.discard(SENTINEL)
        return tuple(sorted(held))


def _action_name(action: str) -> str:
    # An action is '{"<rule name>":{"m":{...}}}'; rule names are plain ASCII (r0, r1, ...).
    if action.startswith('{"'):
        return action[2 : action.index('"', 2)]
    return str(next(iter(json.loads(action))))


def durable_matcher(point: PointSpec) -> Matcher:
    """Compile ``point`` into a durable-rules ruleset; raises ``CompileError`` beyond its limits."""
    return _DurableMatcher(point)
