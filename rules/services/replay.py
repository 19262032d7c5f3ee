"""Replaying logged decisions: under the revision each was made under, and under today's."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any, Protocol

from django.utils.translation import gettext

from rules.engine import CompiledPoint, Decision, evaluate
from rules.engine.compiler import CompileError
from rules.errors import EngineUnavailable, NotFound
from rules.models import ConfigRevision, DecisionRecord
from rules.runtime import engines
from rules.services.decide import invalid_output_decision, record_candidate, record_decision


def same_outcome(a: Decision, b: Decision | None) -> bool:
    """Whether two decisions agree on everything a replay checks (the reason's wording may differ)."""
    if b is None:
        return False
    return (
        a.decision == b.decision
        and a.ruled_by == b.ruled_by
        and (a.rule.key if a.rule else None) == (b.rule.key if b.rule else None)
        and [(m.key, m.shadow) for m in a.matched_rules] == [(m.key, m.shadow) for m in b.matched_rules]
        and a.overridden == b.overridden
    )


@dataclass(frozen=True)
class Replay:
    recorded: Decision
    replayed: Decision
    revision: int
    current: Decision | None
    current_revision: int

    @property
    def identical(self) -> bool:
        return same_outcome(self.recorded, self.replayed)


def decision_replay(*, record: DecisionRecord) -> Replay:
    """Evaluate a logged decision again: under the revision it was made under, and under today's."""
    try:
        then = engines.for_revision(record.revision)
    except ConfigRevision.DoesNotExist as exc:
        raise NotFound(
            gettext("Revision %(revision)s of the configuration no longer exists.") % {"revision": record.revision}
        ) from exc
    except CompileError as exc:
        raise EngineUnavailable(str(exc)) from exc
    point = then.point(record.point)
    if point is None:  # cannot happen for a revision the decision was made under; guard all the same
        raise NotFound(
            gettext("Revision %(revision)s has no point '%(point)s'.")
            % {"revision": record.revision, "point": record.point}
        )
    replayed = reevaluate(point, record, exact=True)
    current_config = engines.current()
    current_point = current_config.point(record.point)
    current = reevaluate(current_point, record, exact=False) if current_point is not None else None
    return Replay(
        recorded=record_decision(record),
        replayed=replayed,
        revision=record.revision,
        current=current,
        current_revision=current_config.revision,
    )


_PLACEHOLDER = re.compile(r"\[[a-z][a-z0-9_]*\]")


class LoggedRequest(Protocol):
    """What a replay needs of a logged request: a ``DecisionRecord``, or a lighter row with the same fields
    (the impact preview reads them with ``values()``; a regression case carries them too)."""

    @property
    def input(self) -> str: ...
    @property
    def masked(self) -> dict[str, Any]: ...
    @property
    def keyword_hits(self) -> dict[str, Any]: ...
    @property
    def facts(self) -> dict[str, Any]: ...
    @property
    def session_state(self) -> str: ...
    @property
    def candidate_decision(self) -> str: ...
    @property
    def candidate_confidence(self) -> float | None: ...
    @property
    def candidate_reason(self) -> str: ...
    @property
    def candidate_invalid(self) -> bool: ...
    @property
    def created_at(self) -> dt.datetime: ...


def reevaluate(point: CompiledPoint, record: LoggedRequest, *, exact: bool) -> Decision:
    """Decide a logged request again. The logged input is masked when personal data was found in it:
    under the revision it was decided under (``exact``), the lists that hit then are known and are used
    instead of a scan, so the replay is identical; under another revision the masked text is scanned with
    the placeholders blanked out (a term like "phone" must not match "[phone]"), plus the recorded hits
    that the lists still hold."""
    candidate = record_candidate(record)
    text = record.input
    known_lists = None
    if record.masked:
        if exact:
            known_lists = list(record.keyword_hits)
        else:
            text = _PLACEHOLDER.sub("\ufffc", text)
    decision = evaluate(
        point,
        text=text,
        candidate=candidate,
        facts=record.facts,
        now=record.created_at,
        session_state=record.session_state or None,
        known_hits=record.keyword_hits if record.masked else None,
        known_lists=known_lists,
    )
    if record.candidate_invalid:
        decision = invalid_output_decision(point, decision, "recorded as invalid")
    return decision
