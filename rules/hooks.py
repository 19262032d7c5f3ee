"""What the configuration asks of the apps built on it: a registry hook per question.

``rules`` imports no app above it (``agents`` builds on ``rules``). Where a rules service needs an
answer that only such an app has — which sessions a state machine change would strand, the anomalies a
logged decision raised — it declares a hook here, and the app registers its provider in its
``AppConfig.ready()`` (with a ``uid``, so registering twice replaces rather than doubles). The service
calls every provider in the order they registered, directly and in its own transaction: whatever a
provider writes joins the change that asked (and its revision), and a provider's exception rolls the
change back. These are explicit calls with typed answers, not broadcast signals: Django signals stay
for what is cross-cutting (cache invalidation, audit extras).

A provider is called with keyword arguments, the ones its hook's comment names (with their types), and
takes ``**_`` too, so that a hook may pass more later: ``def provider(*, point, actor, reason, **_)``.
Those types are written in words, not imported: the models and the services that ask the hooks import
this module, so naming them here would close an import circle, even one of annotations only (issue 22).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

A = TypeVar("A")


class Hook(Generic[A]):
    """One question rules asks; each registered provider answers with an ``A``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._providers: dict[str, Callable[..., A]] = {}

    def register(self, provider: Callable[..., A], *, uid: str) -> None:
        self._providers[uid] = provider

    def unregister(self, uid: str) -> None:
        self._providers.pop(uid, None)

    def ask(self, **kwargs: Any) -> list[A]:
        """Every provider's answer, in the order they registered."""
        return [provider(**kwargs) for provider in list(self._providers.values())]

    def __repr__(self) -> str:
        return f"<Hook {self.name}: {', '.join(self._providers) or 'no provider'}>"


# A decision point is about to be deleted (point: DecisionPoint, actor: rules.config.revisions.Actor,
# reason: str). Providers drop what refers to it.
point_deleting: Hook[None] = Hook("point_deleting")

# Which records outside the configuration would lose something if these points went (keys: list[str]).
# Providers answer {point key: a sentence for people}, shown by import_config's diff.
point_removal_notes: Hook[dict[str, str]] = Hook("point_removal_notes")

# A saved state machine is being checked (machine: StateMachine, the unsaved instance). Providers answer
# {field: message} for what the change would break (e.g. sessions left in a state it drops).
machine_checking: Hook[dict[str, str]] = Hook("machine_checking")

# A state machine is about to be deleted (machine: StateMachine). Providers answer a sentence saying why
# it cannot go, or None.
machine_deleting: Hook[str | None] = Hook("machine_deleting")

# The decision log's retention sweep is running (cutoff: datetime, batch_size: int). Providers purge their
# own records of what happened before ``cutoff`` and answer how many rows they deleted.
decision_log_purging: Hook[int] = Hook("decision_log_purging")

# A logged decision is shown in the admin's why panel (record: DecisionRecord). Providers answer extra
# context for the panel, e.g. {"anomalies": [...]} for the anomalies the decision raised.
decision_shown: Hook[dict[str, Any]] = Hook("decision_shown")

# The decision-point map is counting a window (start, end: datetime, both inclusive; points: list[str] |
# None, the keys it reports on, None for all). Providers answer {point key: [(anomaly code, model,
# prompt version, count), …]} for what they record about points in that window (the agents app: model
# anomalies), the model and prompt version being those logged on the decision that raised the anomaly
# ("" when none was logged or no decision raised it).
report_counting: Hook[dict[str, list[tuple[str, str, str, int]]]] = Hook("report_counting")

# The decision-point map is listing ghost failures (seed 000 §4.2) among decisions made from ``start`` to
# ``end`` (datetimes; points: list[str] | None as above). Providers answer {point key: {"count": int,
# "latest": [ghost failure, …]}} for the points that have any (the agents app knows the sessions' moves).
report_ghost_failures: Hook[dict[str, dict[str, Any]]] = Hook("report_ghost_failures")

__all__ = [
    "Hook",
    "decision_log_purging",
    "decision_shown",
    "machine_checking",
    "machine_deleting",
    "point_deleting",
    "point_removal_notes",
    "report_counting",
    "report_ghost_failures",
]

# A change request took a step (request: ChangeRequest, kind: str, the event's kind as
# rules.governance.change_request_events.KINDS names it, e.g. "created", "applied"; actor), in the
# transaction that records it. Providers answer nothing (the agents app tells webhook subscriptions).
change_request_stepped: Hook[None] = Hook("change_request_stepped")
