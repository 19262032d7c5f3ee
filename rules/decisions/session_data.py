"""What rules read of a session beyond its state, as the engine sees it and as the decision log keeps it.

A point whose rules read session fields (``session_field``) or the keyword lists of the session's latest
decisions (``session_keyword_seen``) is decided on a ``SessionView`` built here from the session as read
(``session_view``), and its log row records exactly that view (``session_read_document``, the
``DecisionRecord.session_read`` column): the fields its rules read and the lists of as many latest
decisions as they look back on. A replay, a regression case and the impact preview decide again on the
view read back from the row (``session_view_logged``), so they see what the decide saw.

Masking. A field declared ``pii`` is logged as ``[masked]``, and a text field in which the point's
masking patterns find personal data is logged masked like a fact; either is named in ``masked_fields``.
A rule that reads a masked field cannot be replayed exactly — its value is gone — and the replay says so
(as for a masked fact) rather than claim an agreement that may be chance. No value is ever kept to make it
exact: that would keep the personal data the mask is for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from rules.engine import CompiledPoint
from rules.engine.masking import WHOLE
from rules.engine.request import NO_SESSION, SessionView


def recent_lists(rows: Iterable[Any] | None) -> tuple[frozenset[str], ...]:
    """The keyword lists of each latest decision, newest first, from the session read's history column (a
    list of lists of list keys; ``None`` when the session has no decisions)."""
    if not rows:
        return ()
    return tuple(frozenset(keys or ()) for keys in rows)


def session_view(
    point: CompiledPoint, field_values: Mapping[str, Any] | None, recent: Sequence[frozenset[str]] = ()
) -> SessionView:
    """What ``point``'s rules may read of a session holding ``field_values`` whose latest decisions hit
    ``recent`` (newest first): only the fields they read, and only as many decisions as they look back on.
    ``NO_SESSION`` for a point whose rules read neither (the common case costs nothing)."""
    if not point.reads_session():
        return NO_SESSION
    values = field_values or {}
    fields = {name: values[name] for name in point.session_fields_read if values.get(name) is not None}
    return SessionView(MappingProxyType(fields), tuple(recent[: point.history_depth]))


def session_read_document(point: CompiledPoint, view: SessionView) -> dict[str, Any]:
    """The log's record of ``view`` (empty when the point reads nothing of a session beyond its state)."""
    if not point.reads_session():
        return {}
    document: dict[str, Any] = {}
    if point.session_fields_read:
        fields: dict[str, Any] = {}
        masked: list[str] = []
        for name, value in sorted(view.fields.items()):
            if name in point.pii_fields:
                fields[name] = WHOLE
                masked.append(name)
            elif isinstance(value, str) and (found := point.masker.mask(value)).counts:
                fields[name] = found.text
                masked.append(name)
            else:
                fields[name] = value
        document["fields"] = fields
        if masked:
            document["masked_fields"] = masked
    if point.history_depth:
        document["recent"] = [sorted(hit) for hit in view.recent]
    return document


def session_view_logged(document: Mapping[str, Any] | None) -> tuple[SessionView, frozenset[str]]:
    """The view a logged ``session_read`` document records, without its masked fields (their values are
    gone), and the names of those fields."""
    if not document:
        return NO_SESSION, frozenset()
    masked = frozenset(document.get("masked_fields") or ())
    fields = {name: value for name, value in (document.get("fields") or {}).items() if name not in masked}
    return SessionView(MappingProxyType(fields), recent_lists(document.get("recent"))), masked


def masked_fields_read(point: CompiledPoint, document: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The session fields masked in a logged ``session_read`` that ``point``'s rules read: where a replay
    may differ."""
    if not document:
        return ()
    return tuple(sorted(set(document.get("masked_fields") or ()) & point.session_fields_read))
