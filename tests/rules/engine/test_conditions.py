"""The registry of condition kinds, and what it guarantees the backends."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import pytest

from rules.engine.compiler import CompileError, point_spec
from rules.engine.conditions import KINDS, read_condition
from rules.engine.conditions.base import CompileContext, ConditionSpec, Fixed
from rules.engine.native import native_matcher


def test_every_kind_module_registers_one_final_kind_under_its_module_name():
    for kind, spec in KINDS.items():
        assert spec.__module__ == f"rules.engine.conditions.{kind}"
        assert getattr(spec, "__final__", False), kind
        assert dataclasses.is_dataclass(spec) and spec.__dataclass_params__.frozen, kind
        assert "__slots__" in vars(spec), kind


def test_an_unknown_kind_is_a_compile_error():
    ctx = CompileContext(thresholds={}, facts={})
    with pytest.raises(CompileError, match="unknown condition"):
        read_condition({"telepathy": True}, ctx)
    with pytest.raises(CompileError, match="unknown threshold 'nope'"):
        read_condition({"candidate_confidence_below": "nope"}, ctx)


@dataclasses.dataclass(frozen=True, slots=True)
class _Leaky(ConditionSpec):
    """Not a registered kind: one that writes a configured text into the generated source."""

    kind: ClassVar[str] = "leaky"
    text: str

    @classmethod
    def read(cls, raw, ctx):
        return cls(raw["leaky"])

    def holds(self, point, request):
        return self.text in request.facts

    def native(self, b):
        return f"({self.text!r} in facts)"

    def durable(self, t):
        return [(t.computed(self),)]

    def explainer(self):
        return Fixed("leaky")


def test_a_condition_that_writes_a_value_into_the_generated_source_is_refused():
    raw = {"key": "p", "outcomes": ["a"], "default_outcome": "a", "rules": []}
    rule = point_spec({**raw, "rules": [{"key": "r", "priority": 1, "category": "risk", "outcome": "a"}]}, {}).rules[0]
    leaky = dataclasses.replace(point_spec(raw, {}), rules=(dataclasses.replace(rule, conditions=(_Leaky("x"),)),))
    with pytest.raises(CompileError, match="the leaky condition wrote a value into the source"):
        native_matcher(leaky)
