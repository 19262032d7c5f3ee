"""The kinds of condition on the Django side: one adapter module per kind, found here.

Every module of this package but ``base`` defines exactly one concrete ``ConditionAdapter`` (see
``base`` for what it answers). ``ADAPTERS`` maps each kind to its adapter, in the order kinds are
listed (``position``); the set of kinds must be the engine's (``rules.engine.conditions.KINDS``), or
importing this package fails.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from rules.config.condition_kinds.base import INPUTS, ConditionAdapter
from rules.engine.conditions import KINDS as ENGINE_KINDS


def _discover() -> list[ConditionAdapter]:
    adapters: list[ConditionAdapter] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found = [
            value
            for value in vars(module).values()
            if isinstance(value, type)
            and issubclass(value, ConditionAdapter)
            and value.__module__ == module.__name__
            and not inspect.isabstract(value)
        ]
        if len(found) != 1:
            raise ImportError(f"{module.__name__} must define exactly one kind of condition; it defines {len(found)}")
        adapters.append(found[0]())
    return sorted(adapters, key=lambda a: (a.position, a.kind))


def _registry(adapters: list[ConditionAdapter]) -> dict[str, ConditionAdapter]:
    registry: dict[str, ConditionAdapter] = {}
    for a in adapters:
        if a.kind in registry:
            raise ImportError(f"the condition kind {a.kind!r} has two adapters")
        unknown = set(a.inputs) - set(INPUTS)
        if unknown:
            raise ImportError(f"the condition kind {a.kind!r} uses inputs Condition does not have: {sorted(unknown)}")
        registry[a.kind] = a
    missing, stray = sorted(set(ENGINE_KINDS) - set(registry)), sorted(set(registry) - set(ENGINE_KINDS))
    if missing or stray:
        raise ImportError(
            f"condition kinds without an adapter: {missing or 'none'}; "
            f"adapters without an engine kind: {stray or 'none'}"
        )
    return registry


ADAPTERS: Mapping[str, ConditionAdapter] = MappingProxyType(_registry(_discover()))
KINDS: tuple[str, ...] = tuple(ADAPTERS)
# Kind → the inputs (columns of Condition) it uses.
INPUTS_USED: dict[str, tuple[str, ...]] = {kind: a.inputs for kind, a in ADAPTERS.items()}
# Every key a condition's document form may hold at its top level.
DOCUMENT_KEYS: frozenset[str] = frozenset(k for a in ADAPTERS.values() for k in (a.kind, *a.document_keys))


def adapter(kind: str) -> ConditionAdapter | None:
    return ADAPTERS.get(kind)


def empty_inputs() -> dict[str, Any]:
    """Input → its empty value, for every input of ``Condition`` (fresh lists each time)."""
    return {name: list(empty) if isinstance(empty, list) else empty for name, empty in INPUTS.items()}


def unused_inputs(kind: str) -> dict[str, Any]:
    """Input → empty value for every input that a condition of ``kind`` does not use."""
    kind_adapter = ADAPTERS.get(kind)
    used = kind_adapter.inputs if kind_adapter else ()
    return {name: empty for name, empty in empty_inputs().items() if name not in used}


__all__ = [
    "ADAPTERS",
    "DOCUMENT_KEYS",
    "INPUTS",
    "INPUTS_USED",
    "KINDS",
    "ConditionAdapter",
    "adapter",
    "empty_inputs",
    "unused_inputs",
]
