"""Writes to state machines, each recording who and why."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.utils.translation import gettext

from rules.config.revisions import Actor, audited_delete, audited_save
from rules.hooks import machine_deleting
from rules.models import DecisionPoint, StateMachine


def machine_save(*, machine: StateMachine, actor: Actor, reason: str) -> StateMachine:
    audited_save(machine, actor=actor, reason=reason)
    return machine


def machine_delete(*, machine: StateMachine, actor: Actor, reason: str) -> None:
    points = sorted(DecisionPoint.objects.filter(machine=machine.key).values_list("key", flat=True))
    if points:
        raise ValidationError(
            gettext("Decision points move sessions of %(machine)s: %(points)s; change them first.")
            % {"machine": machine.key, "points": ", ".join(points)}
        )
    for refusal in machine_deleting.ask(machine=machine):
        if refusal:
            raise ValidationError(refusal)
    audited_delete(machine, actor=actor, reason=reason)
