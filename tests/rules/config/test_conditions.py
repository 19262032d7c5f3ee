"""The kinds of condition on the Django side: one adapter per engine kind, and what the model takes from them."""

from __future__ import annotations

from rules.config.condition_kinds import ADAPTERS, INPUTS, KINDS, unused_inputs
from rules.engine.conditions import KINDS as ENGINE_KINDS
from rules.models import Condition, ConditionKind


def test_every_engine_kind_has_one_adapter_in_a_module_named_after_it():
    assert set(ADAPTERS) == set(ENGINE_KINDS)
    for kind, adapter in ADAPTERS.items():
        assert type(adapter).__module__ == f"rules.config.condition_kinds.{kind}"
        assert adapter.kind == kind
        assert set(adapter.inputs) <= set(INPUTS), kind


def test_the_model_takes_its_kinds_inputs_and_constraints_from_the_adapters():
    assert [value for value, _ in Condition._meta.get_field("kind").choices] == list(KINDS)
    assert list(ConditionKind.values) == list(KINDS)
    names = {c.name for c in Condition._meta.constraints}
    assert {a.requires[0] for a in ADAPTERS.values() if a.requires} <= names
    for name in INPUTS:
        Condition._meta.get_field(name)
    for kind, adapter in ADAPTERS.items():
        assert set(unused_inputs(kind)) == set(INPUTS) - set(adapter.inputs)
