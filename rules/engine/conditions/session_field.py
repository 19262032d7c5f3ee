"""``{session_field: <name>, op: <op>, value: <literal> | threshold: <key>}`` or
``{session_field: <name>, pattern: <regular expression>}`` — a field of the request's session compared
as a fact is (``fact``), or matched as a text fact is (``fact_matches``).

The field is one the point's machine declares (``validate_config`` refuses any other, and an operator
that does not fit its type). A field the session does not hold never holds; nor does a value of
another type than the one compared with (a declaration changed since the value was set): the engine
never compares a text with a number. ``in`` on an ``array`` field holds when any of its items is one of
the values. A pattern is searched for in a text value ignoring case, as ``fact_matches`` searches.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, final

from rules.engine.conditions.base import (
    COMPARISONS,
    CompileContext,
    CompileError,
    ConditionSpec,
    DurableTranslator,
    Explainer,
    Facts,
    Hits,
    NativeBuilder,
    PointView,
    Test,
    compared,
)

if TYPE_CHECKING:
    from rules.engine.request import Request, SessionView

MATCHES = "matches"  # the operator a pattern is stored with (``Condition.operator``)


def value_kind(value: Any) -> str | None:
    """``number``, ``text`` or ``bool`` — what a literal (or a field's value) is compared as."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "text"
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _is_scalar(value: Any) -> bool:
    return value_kind(value) is not None


_GUARDS = {"number": _is_number, "text": _is_text, "bool": _is_bool}


def _any_item_in(value: Any, options: frozenset[Any]) -> bool:
    """An array field's test for ``in``: any of its scalar items is one of ``options``."""
    return isinstance(value, list) and any(
        value_kind(item) is not None and value_kind(item) == value_kind(o) and item == o
        for item in value
        for o in options
    )


@final
@dataclass(frozen=True, slots=True)
class SessionField(ConditionSpec):
    kind: ClassVar[str] = "session_field"

    name: str
    op: str  # < <= > >= == != in, or ``matches`` for a pattern
    value: Any  # a number, a text or a boolean; for ``in`` a tuple of them; for a pattern its text
    threshold_key: str = ""  # the threshold ``value`` was read from, if any
    field_type: str = ""  # as the machine declares it
    pii: bool = False  # the field's values are personal data: a reason never shows them
    regex: re.Pattern[str] | None = field(default=None, compare=False)

    @classmethod
    def read(cls, raw: Mapping[str, Any], ctx: CompileContext) -> SessionField:
        name = raw["session_field"]
        field_type = ctx.session_fields.get(name, "")
        pii = name in ctx.pii_fields
        if "pattern" in raw:
            pattern = raw["pattern"]
            try:
                regex = re.compile(pattern, re.IGNORECASE)
            except (re.error, OverflowError, RecursionError) as exc:
                raise CompileError(f"session_field {name}: {pattern!r} does not compile ({exc})") from exc
            return SessionField(name, MATCHES, pattern, field_type=field_type, pii=pii, regex=regex)
        op = raw["op"]
        if "threshold" in raw:
            key = raw["threshold"]
            return SessionField(name, op, ctx.threshold(key), threshold_key=key, field_type=field_type, pii=pii)
        value = raw.get("value")
        if op == "in":
            value = tuple(value or ())
        return SessionField(name, op, value, field_type=field_type, pii=pii)

    def session_field_read(self) -> str | None:
        return self.name

    def _kind(self) -> str | None:
        """What the field's value must be to be compared: the literal's kind (for ``in``, its first item's)."""
        if self.op == MATCHES:
            return "text"
        if self.op == "in":
            return value_kind(self.value[0]) if self.value else None
        return value_kind(self.value)

    def holds(self, point: PointView, request: Request) -> bool:
        value = request.session.fields.get(self.name)
        if value is None:
            return False
        op = self.op
        if op == MATCHES:
            return isinstance(value, str) and self.regex is not None and self.regex.search(value) is not None
        if op == "in":
            if self.field_type == "array":
                return _any_item_in(value, frozenset(self.value))
            return any(value_kind(value) == value_kind(o) and value == o for o in self.value)
        if value_kind(value) != value_kind(self.value):
            return False
        return compared(op, value, self.value)

    def native(self, b: NativeBuilder) -> str:
        f = b.session_field_var(self.name)
        if self.op == MATCHES:
            assert self.regex is not None
            is_text, search = b.const(_is_text), b.const(self.regex.search)
            return f"({is_text}({f}) and {search}({f}) is not None)"
        if self.op == "in" and self.field_type == "array":
            return f"({f} is not None and {b.const(_any_item_in)}({f}, {b.const(frozenset(self.value))}))"
        if self.op == "in":
            # Paired with their kinds: 1 == True in Python, never in a session's field.
            pairs = frozenset((value_kind(o), o) for o in self.value)
            kind_of, scalar = b.const(value_kind), b.const(_is_scalar)
            return f"({scalar}({f}) and ({kind_of}({f}), {f}) in {b.const(pairs)})"
        kind = self._kind()
        if kind is None:
            return "False"
        guard = b.const(_GUARDS[kind])
        return f"({guard}({f}) and {f} {self.op} {b.const(self.value)})"

    def durable(self, t: DurableTranslator) -> list[tuple[Test, ...]]:
        if self.op in COMPARISONS and self._kind() is not None:
            return [(t.compare_session_field(self.name, self.op, self.value),)]
        return [(t.computed(self),)]

    def explainer(self) -> Explainer:
        name, pii = self.name, self.pii
        if self.op == MATCHES:
            tail = f" matches /{self.value}/"
        else:
            rhs = f"{self.threshold_key} {self.value:g}" if self.threshold_key else repr(self.value)
            tail = f" {self.op} {rhs}"
        head = f"session field {name} "

        def session_field(_hits: Hits, _facts: Facts, _c: Any, _f: Any, _s: Any, session: SessionView) -> str:
            # A personal field's value is never written into a reason (the log keeps reasons).
            shown = "(personal data)" if pii else repr(session.fields.get(name))
            return f"{head}{shown}{tail}"

        return session_field
