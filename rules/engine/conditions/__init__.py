"""The kinds of condition: one module each, found here, so that adding a kind is adding its module.

Every module of this package but ``base`` defines exactly one ``@final`` subclass of
``ConditionSpec`` (see ``base`` for what a kind answers). ``KINDS`` maps the key that names a kind in
the snapshot form (``input_contains``, ``fact``, …) to its class; ``read_condition`` reads one
condition of a snapshot into its spec.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from rules.engine.conditions.base import CompileContext, CompileError, ConditionSpec


def _discover() -> dict[str, type[ConditionSpec]]:
    kinds: dict[str, type[ConditionSpec]] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found = [
            value
            for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, ConditionSpec) and value.__module__ == module.__name__
        ]
        if len(found) != 1:
            raise ImportError(f"{module.__name__} must define exactly one kind of condition; it defines {len(found)}")
        spec = found[0]
        if spec.kind in kinds:
            raise ImportError(f"{module.__name__}: the kind {spec.kind!r} is defined twice")
        kinds[spec.kind] = spec
    return kinds


KINDS: Mapping[str, type[ConditionSpec]] = MappingProxyType(_discover())


def read_condition(raw: Mapping[str, Any], ctx: CompileContext) -> ConditionSpec:
    """The spec of one condition in the snapshot form: the first key that names a kind says which."""
    for key in raw:
        spec = KINDS.get(key)
        if spec is not None:
            return spec.read(raw, ctx)
    raise CompileError(f"unknown condition {raw!r}")


__all__ = ["KINDS", "CompileContext", "CompileError", "ConditionSpec", "read_condition"]
