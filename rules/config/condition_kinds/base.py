"""What a kind of condition is on the Django side: the ``Condition`` columns it uses and every reading of them.

One ``ConditionAdapter`` per kind, in a module of its own in this package (the engine's side of the same
kind is ``rules.engine.conditions.<kind>``). An adapter says which columns of ``Condition`` the kind
uses, how its values are checked (``problems``, called by ``Condition.clean()`` and so by the admin and
the services), how the kind is read from YAML with a problem for each path and line (``read``), written
to the configuration document (``document``), filled from a document (``fill``, by ``import_config``),
described in the admin (``describe``), and what its inputs look like in the admin form. The model, the
admin form, the selectors and the YAML validator and importer take all of this from the registry, so a
new kind is a new module here and one in the engine.

The checks themselves are pure functions over plain values (``rules.config.validators`` and the adapter's own
module); adapters receive plain values too — a ``ConditionValues`` mapping and a ``PointView`` — so the
same checks serve a ``Condition`` record and a YAML document. A saved condition reaches an adapter as a
``ConditionRow``, what the adapters read and write of a ``Condition``: the models use the adapters, so the
adapters do not name the models, not even in annotations (issue 22: no import circle inside rules).
"""

from __future__ import annotations

import abc
import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from django.utils.functional import Promise

if TYPE_CHECKING:
    from django.db.models import Q

    from rules.config.document.readers import Reader
    from rules.config.document.yamlload import Path

# The columns of ``Condition`` a kind may use, and their value when a kind does not use them.
INPUTS: Mapping[str, Any] = {
    "keyword_list": None,
    "threshold": None,
    "fact": "",
    "operator": "",
    "value": None,
    "outcomes": [],
    "states": [],
    "window_start": None,
    "window_end": None,
    "timezone": "",
    "unless": [],
    "unless_negated": False,
}

# A condition's values as ``problems`` sees them: each input above by name; ``keyword_list`` and
# ``threshold`` are the referenced record's key (or None).
ConditionValues = Mapping[str, Any]


class KeyedRecord(Protocol):
    """A keyword list or a threshold as a condition refers to it: by its key."""

    @property
    def key(self) -> str: ...


class ConditionRow(Protocol):
    """What the adapters read and write of a saved ``Condition`` (``rules.config.models.points``): its inputs."""

    fact: str
    operator: str
    value: Any  # a JSON literal, of the type its fact is declared with
    outcomes: list[str]
    states: list[str]
    window_start: dt.time | None
    window_end: dt.time | None
    timezone: str
    unless: list[str]
    unless_negated: bool

    @property
    def threshold_id(self) -> int | None: ...

    @property
    def keyword_list(self) -> KeyedRecord | None: ...

    # Any: the record from ``Records``, which only the model's own type (it would close the circle) names.
    @keyword_list.setter
    def keyword_list(self, value: Any) -> None: ...

    @property
    def threshold(self) -> KeyedRecord | None: ...

    # Any: as for ``keyword_list``.
    @threshold.setter
    def threshold(self, value: Any) -> None: ...


@dataclass(frozen=True)
class PointView:
    """What a condition is checked against: its point's key, declared facts and outcomes."""

    key: str
    facts: Mapping[str, str] = field(default_factory=dict)
    outcomes: tuple[str, ...] = ()
    # The state machine the point moves, and the fields it declares (name → type); None: not known here.
    machine: str = ""
    session_fields: Mapping[str, str] | None = None


@dataclass(frozen=True)
class DocumentContext:
    """What a condition in a YAML document is read against. ``facts`` or ``outcomes`` is None when the
    point's own declaration of them was refused (then nothing is checked against it)."""

    point: str
    facts: Mapping[str, str] | None
    outcomes: list[str] | None
    thresholds: frozenset[str]
    keyword_lists: frozenset[str]
    # The point's machine and the fields it declares (name → type); None when its fields cannot be read.
    machine: str = ""
    session_fields: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Records:
    """The records a document's references resolve to when it is applied."""

    keyword_lists: Mapping[str, KeyedRecord]
    thresholds: Mapping[str, KeyedRecord]


class ConditionAdapter(abc.ABC):
    """One kind of condition, for the models, the YAML format and the admin."""

    kind: ClassVar[str]  # the kind's key (the engine's ``ConditionSpec.kind``)
    label: ClassVar[str | Promise]  # how the admin names the kind (translatable)
    position: ClassVar[int]  # where the kind is listed (admin choices, messages): lowest first
    inputs: ClassVar[tuple[str, ...]] = ()  # the columns of ``Condition`` it uses; the others are emptied
    # Keys of its document form beside the kind's own (the fact kind is written flat: fact, op, value).
    document_keys: ClassVar[tuple[str, ...]] = ()
    # The admin's help for an input, where this kind uses it differently from the others.
    help_texts: ClassVar[Mapping[str, str | Promise]] = {}
    # (constraint name, what the database requires of a row of this kind), or None.
    requires: ClassVar[tuple[str, Q] | None] = None

    @abc.abstractmethod
    def problems(self, values: ConditionValues, point: PointView | None) -> dict[str, str]:
        """Field → what is wrong, for a condition of this kind (``point`` is None before it has one)."""

    @abc.abstractmethod
    def read(self, r: Reader, item: dict[str, Any], path: Path, ctx: DocumentContext) -> dict[str, Any] | None:
        """The canonical document of a condition written as ``item``, or None after recording its problems."""

    @abc.abstractmethod
    def document(self, c: ConditionRow) -> dict[str, Any]:
        """The condition in the configuration document (``rules.config.selectors.config_document``)."""

    @abc.abstractmethod
    def fill(self, c: ConditionRow, doc: Mapping[str, Any], records: Records) -> None:
        """Set the inputs of ``c`` (all empty) from its canonical document."""

    @abc.abstractmethod
    def describe(self, c: ConditionRow) -> str:
        """A short human sentence for lists and the why panel."""

    def fact_of(self, c: ConditionRow) -> str | None:
        """The declared fact a saved condition tests, if any (its point may not drop the fact)."""
        return None

    def fact_type_problem(self, c: ConditionRow, fact_type: str) -> str | None:
        """What is wrong with a saved condition if its fact were declared of ``fact_type`` instead."""
        return None

    def outcomes_used(self, c: ConditionRow) -> Iterable[str]:
        """The point's outcomes a saved condition names (a point may not drop them)."""
        return ()

    def form_initial(self, c: ConditionRow) -> dict[str, Any]:
        """What the admin form shows in the inputs of a saved condition, where it is not the stored value."""
        return {}

    def form_clean(self, cleaned: dict[str, Any], point: PointView | None) -> None:  # noqa: B027 - optional
        """Turn what was typed into the admin form's inputs into the values stored (as typed by default)."""


class SingleKeyAdapter(ConditionAdapter):
    """A kind written as one key holding its value: ``{candidate_in: [a, b]}``."""

    def read(self, r: Reader, item: dict[str, Any], path: Path, ctx: DocumentContext) -> dict[str, Any] | None:
        if r.mapping(item, path, (self.kind,), (self.kind,)) is None:
            return None
        start = r.count()
        result = self.read_value(r, item[self.kind], (*path, self.kind), ctx)
        return None if r.count() > start else result

    @abc.abstractmethod
    def read_value(self, r: Reader, value: Any, path: Path, ctx: DocumentContext) -> dict[str, Any] | None:
        """The canonical document of the condition whose value (at ``path``) is ``value``."""
