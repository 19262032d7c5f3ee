"""What a kind of condition is: one frozen spec class that knows every reading of itself.

A kind is a subclass of ``ConditionSpec`` in a module of its own in this package. It is read from the
snapshot form once per revision (``read``: thresholds become numbers, keyword lists bit positions),
and it answers for every backend: its plain reading (``holds``, the reference interpreter), its
generated code (``native``), its durable-rules tests (``durable``) and the words of a reason
(``explainer``). The backends call these methods and nothing else, so no backend holds a chain of
``if kind == …`` and a new kind is one new module.

Why an abstract base class rather than a union of specs matched exhaustively in each backend: with a
union, every backend would still hold one branch per kind (the chains this replaces), only checked.
With abstract methods, each kind's module holds all of its readings; every kind class is ``@final``,
and mypy refuses a final class that leaves an abstract method unimplemented (and Python refuses to
instantiate it), so a kind cannot be registered with a reading missing.
"""

from __future__ import annotations

import abc
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol

if TYPE_CHECKING:
    from rules.engine.request import Request, SessionView

Hits = Mapping[str, tuple[str, ...]]
Facts = Mapping[str, Any]
# (named keyword hits, facts, candidate outcome, confidence, session state, session view) -> the words for
# one condition
Explainer = Callable[[Hits, Facts, str | None, float | None, str | None, "SessionView"], str]


class CompileError(ValueError):
    """The snapshot cannot be compiled (it should have been refused when it was written)."""


TRUE = "true"  # JSON true: what a boolean field is compared with


class Test(NamedTuple):
    """One durable-rules alpha test: ``field op constant``, the constant already written as JSON."""

    field: str
    op: str  # == != < <= > >= ex
    const: str


class CompileContext:
    """What reading a condition may resolve: threshold values, declared fact types, keyword list bits, and
    the fields the point's machine declares (name → type; ``pii_fields``: those whose values are masked)."""

    __slots__ = ("_bits", "_thresholds", "facts", "pii_fields", "session_fields")

    def __init__(
        self,
        *,
        thresholds: Mapping[str, float],
        facts: Mapping[str, str],
        session_fields: Mapping[str, str] | None = None,
        pii_fields: frozenset[str] = frozenset(),
    ) -> None:
        self._thresholds = thresholds
        self.facts = facts
        self.session_fields: Mapping[str, str] = session_fields or {}
        self.pii_fields = pii_fields
        self._bits: dict[tuple[str, tuple[str, ...], bool], int] = {}

    def threshold(self, key: str) -> float:
        if key not in self._thresholds:
            raise CompileError(f"unknown threshold {key!r}")
        return self._thresholds[key]

    def keyword_bit(self, list_key: str, unless: tuple[str, ...] = (), negated: bool = False) -> int:
        """The bit of ``list_key`` (read with ``unless`` patterns, and with negated hits dropped if ``negated``)
        in the point's scan results; lists get bits in order of first use. A list used with and without an
        ``unless`` has a bit for each reading."""
        return self._bits.setdefault((list_key, unless, negated), len(self._bits))

    def keyword_lists(self) -> tuple[str, ...]:
        """The lists the point's conditions use, by bit: bit i of a scan result ↔ element i."""
        return tuple(key for key, _unless, _negated in sorted(self._bits, key=self._bits.__getitem__))

    def keyword_unless(self) -> tuple[tuple[str, ...], ...]:
        """The ``unless`` patterns of each bit, in the order of ``keyword_lists``."""
        return tuple(unless for _key, unless, _negated in sorted(self._bits, key=self._bits.__getitem__))

    def keyword_negated(self) -> tuple[bool, ...]:
        """Whether each bit's list drops negated hits (``unless_negated``), in the order of ``keyword_lists``."""
        return tuple(negated for _key, _unless, negated in sorted(self._bits, key=self._bits.__getitem__))


class PointView(Protocol):
    """What a kind of condition reads of the point it is judged for (``rules.engine.model.PointSpec`` is one).

    Only this, rather than ``PointSpec``: the model holds the kinds' specs, so the kinds naming the model
    would close an import circle, even one of annotations only (issue 22). A kind that needs more of the
    point adds it here.
    """

    @property
    def whitelist(self) -> frozenset[str]:
        """The outcomes the LLM's candidate may decide alone."""
        ...


class NativeBuilder(Protocol):
    """What a kind's ``native`` may use to write its expression (see ``rules.engine.native``).

    The expression is Python source over the generated function's parameters (``mask``, ``cand``,
    ``conf``, ``facts``, ``state``, ``now``) and the names these methods return. It may hold only
    identifiers, integer literals and operators: every value from the configuration goes through
    ``const``. The builder refuses an expression with anything else in it.
    """

    @property
    def point(self) -> PointView: ...

    def const(self, value: Any) -> str:
        """A name bound to ``value`` in the generated function's globals."""
        ...

    def fact_var(self, fact: str) -> str:
        """A local holding ``facts.get(fact)``, read once per request."""
        ...

    def time_of_day_var(self, tz: str) -> str:
        """A local holding the request's time of day in ``tz``, in seconds after midnight."""
        ...

    def session_field_var(self, name: str) -> str:
        """A local holding the session's field ``name`` (``None`` when it holds none), read once per request.
        The generated function's ``sess`` parameter is the request's ``SessionView``."""
        ...


class DurableTranslator(Protocol):
    """What a kind's ``durable`` may use to write its tests (see ``rules.engine.durable``).

    A kind answers alternatives, each a conjunction of tests (a condition in disjunctive normal form).
    The fields are the request's, laid out once per point; durable-rules compares them with constants.
    """

    @property
    def point(self) -> PointView: ...

    def fail(self, why: str) -> CompileError:
        """The error for a point this backend cannot run."""
        ...

    def text(self, value: Any, what: str) -> str:
        """``value`` as a constant to compare a text field with; refused if it is no text or too long."""
        ...

    def number(self, value: Any, what: str) -> str:
        """``value`` as a constant to compare a number field with; refused unless durable-rules is exact."""
        ...

    def keyword_field(self, bit: int) -> str:
        """A field that is ``true`` when the keyword list of ``bit`` hit."""
        ...

    def compare_fact(self, fact: str, op: str, value: Any) -> Test:
        """A test of the field holding ``fact`` against ``value`` (``op``: ``< <= > >= == !=``).

        The fact is sent typed like ``value`` (a number, a boolean or a text); a point that compares one
        fact with values of different types, or with a value durable-rules cannot compare exactly, is refused.
        """
        ...

    def compare_session_field(self, name: str, op: str, value: Any) -> Test:
        """As ``compare_fact``, for the session's field ``name`` (sent only when it is of ``value``'s type)."""
        ...

    def candidate_field(self) -> str:
        """The candidate outcome (missing when no candidate was given)."""
        ...

    def confidence_field(self) -> str:
        """The candidate's confidence (missing when no candidate was given)."""
        ...

    def state_field(self) -> str:
        """The session state (missing when there is none)."""
        ...

    def time_of_day_field(self, tz: str) -> str:
        """The request's time of day in ``tz``, in seconds after midnight."""
        ...

    def computed(self, condition: ConditionSpec) -> Test:
        """A test that holds when ``condition.holds`` does, computed in Python before the fact is asserted.

        For what durable-rules cannot compare correctly itself (membership in a list, regular expressions).
        """
        ...


class ConditionSpec(abc.ABC):
    """One condition of a rule, resolved for evaluation. Subclasses are frozen, slotted dataclasses."""

    __slots__ = ()

    kind: ClassVar[str]  # how the snapshot names the kind: the key of its document form

    @classmethod
    @abc.abstractmethod
    def read(cls, raw: Mapping[str, Any], ctx: CompileContext) -> ConditionSpec:
        """The spec of one condition in the snapshot form (``rules.config.selectors.config_document``)."""

    @abc.abstractmethod
    def holds(self, point: PointView, request: Request) -> bool:
        """The reference reading: plain, obviously correct, what every backend is tested against."""

    @abc.abstractmethod
    def native(self, b: NativeBuilder) -> str:
        """A Python expression that is true when the condition holds (see ``NativeBuilder``)."""

    @abc.abstractmethod
    def durable(self, t: DurableTranslator) -> list[tuple[Test, ...]]:
        """Alternatives of tests: the condition holds when every test of one alternative does."""

    @abc.abstractmethod
    def explainer(self) -> Explainer:
        """The words of a reason for this condition, with everything from the configuration formatted now."""

    def keyword_bit(self) -> int:
        """A bitmask of the keyword list without whose hit the condition cannot hold (0: none)."""
        return 0

    def fact_read(self) -> str | None:
        """The fact the condition reads, if any (a replay cannot be exact when that fact was masked)."""
        return None

    def session_field_read(self) -> str | None:
        """The session field the condition reads, if any (what the decision log records of the session)."""
        return None

    def history_depth(self) -> int:
        """How many of the session's latest logged decisions the condition looks back on (0: none)."""
        return 0

    def reads_clock(self) -> bool:
        """Whether the condition depends on the request's ``now`` (see ``PointSpec.reads_clock``)."""
        return False

    def confidence_floor(self) -> tuple[str, float] | None:
        """(threshold key, value) when the condition judges a candidate's confidence by a threshold."""
        return None


@dataclass(frozen=True, slots=True)
class Fixed:
    """An explainer whose words do not depend on the request."""

    text: str

    def __call__(self, *_: Any) -> str:
        return self.text


# The comparison operators of the ``fact`` and ``session_field`` kinds: the text their native code is
# written with, and the function their ``holds`` calls.
COMPARISONS: Mapping[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


def compared(op: str, left: Any, right: Any) -> bool:
    """``left <op> right`` for one of ``COMPARISONS``; ``ValueError`` for any other operator."""
    compare = COMPARISONS.get(op)
    if compare is None:
        raise ValueError(f"unknown operator {op!r}")
    return bool(compare(left, right))
