"""Replaying logged decisions: under the revision each was made under, and under today's.

A replay decides again from what the log holds. The input's masked personal data is made up for by the
keyword hits recorded with it; a masked fact is not: its value is gone, so the fact is left out of the
replay (as if the request had not sent it). When a rule of the point reads a masked fact, the replay
cannot be exact, and says so (``Replay.masked_facts``; ``identical`` is then false) rather than claim an
agreement that may be chance.

What the rules read of the session beyond its state (its fields, the keyword lists of its latest
decisions) is replayed from what the row recorded (``DecisionRecord.session_read``,
``rules.decisions.session_data``), not from the session as it is now; a field masked there (``pii``) is
left out as a masked fact is, and named in ``Replay.masked_fields``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from django.utils.translation import gettext

from rules.config.runtime import engines
from rules.decisions.compute import decision_for_invalid_output
from rules.decisions.decide import decision_from_record, decision_record_candidate
from rules.decisions.session_data import masked_fields_read, session_view_logged
from rules.engine import Candidate, CompiledPoint, Decision, evaluate, keyword_prepass
from rules.engine.compiler import CompileError
from rules.engine.masking import masked_fact_names
from rules.engine.request import SessionView
from rules.errors import EngineUnavailable, NotFound
from rules.models import ConfigRevision, DecisionRecord


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
    # Masked facts that rules of the point (in the recorded revision) read: the replay is not exact.
    masked_facts: tuple[str, ...] = ()
    # Session fields masked in the log (pii) that rules of the point read: nor is it then.
    masked_fields: tuple[str, ...] = ()

    @property
    def identical(self) -> bool:
        return not self.masked_facts and not self.masked_fields and same_outcome(self.recorded, self.replayed)


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
    replayed = decision_reevaluate(point, record, exact=True)
    current_config = engines.current()
    current_point = current_config.point(record.point)
    current = decision_reevaluate(current_point, record, exact=False) if current_point is not None else None
    return Replay(
        recorded=decision_from_record(record),
        replayed=replayed,
        revision=record.revision,
        current=current,
        current_revision=current_config.revision,
        masked_facts=masked_facts_read(point, record),
        masked_fields=masked_fields_read(point, record.session_read),
    )


_PLACEHOLDER = re.compile(r"\[[a-z][a-z0-9_]*\]")


class LoggedRequest(Protocol):
    """What ``decision_reevaluate`` needs of a logged request: a ``DecisionRecord``, or anything with the same fields
    (a regression case carries them too). The impact preview reads raw rows and calls ``replay_decision``."""

    @property
    def input(self) -> str: ...
    @property
    def masked(self) -> dict[str, Any]: ...
    @property
    def keyword_hits(self) -> dict[str, Any]: ...
    @property
    def masked_facts(self) -> dict[str, Any]: ...
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
    @property
    def session_read(self) -> dict[str, Any]: ...


def masked_facts_read(point: CompiledPoint, record: LoggedRequest) -> tuple[str, ...]:
    """The facts masked in the logged request that ``point``'s rules read: where its replay may differ."""
    if not record.masked_facts:
        return ()
    return tuple(sorted(masked_fact_names(record.masked_facts) & point.facts_read))


def facts_unmasked(facts: Mapping[str, Any], masked_facts: Any) -> tuple[Mapping[str, Any], frozenset[str]]:
    """The logged facts without those masked before they were stored (their values are placeholders),
    and the names left out."""
    if not masked_facts:
        return facts, frozenset()
    hidden = masked_fact_names(masked_facts)
    return {name: value for name, value in facts.items() if name not in hidden}, hidden


def decision_reevaluate(point: CompiledPoint, record: LoggedRequest, *, exact: bool) -> Decision:
    """Decide a logged request again (see ``replay_decision``)."""
    return replay_decision(
        point,
        text=record.input,
        masked=bool(record.masked),
        keyword_hits=record.keyword_hits,
        facts=facts_unmasked(record.facts, record.masked_facts)[0],
        session_state=record.session_state,
        session=session_view_logged(record.session_read)[0],
        candidate=decision_record_candidate(record),
        candidate_invalid=record.candidate_invalid,
        now=record.created_at,
        exact=exact,
    )


Prepass = tuple[int, dict[int, list[str]]]
# At most this many pre-passes are kept (the dict is emptied when full): kept for all of a point's 10,000
# rows they cost more (memory, the collector walking them) than a scan saves when few texts repeat —
# measured on the 200-rule benchmark point, bench/RESULTS.md. The commonest texts come back soon after.
PREPASS_CACHE = 1024


def replay_decision(
    point: CompiledPoint,
    *,
    text: str,
    masked: bool,
    keyword_hits: Mapping[str, Any] | None,
    facts: Mapping[str, Any],
    session_state: str,
    candidate: Candidate | None,
    candidate_invalid: bool,
    now: dt.datetime,
    exact: bool,
    prepasses: dict[str, Prepass] | None = None,
    session: SessionView | None = None,
) -> Decision:
    """Decide a logged request again, from its logged fields. The logged input is masked when personal data
    was found in it: under the revision it was decided under (``exact``), the lists that hit then are known
    and are used instead of a scan, so the replay is identical; under another revision the masked text is
    scanned with the placeholders blanked out (a term like "phone" must not match "[phone]"), plus the
    recorded hits that the lists still hold.

    ``prepasses``, a dict kept by the caller for one compiled point, holds the text pre-passes of recent
    distinct inputs (up to ``PREPASS_CACHE``): a replay of many logged requests scans a repeated text once.
    ``keyword_hits`` is read only when ``masked``; ``facts`` come without the masked ones (see the module
    docstring)."""
    known_lists = None
    known_hits = None
    if masked:
        known_hits = keyword_hits or {}
        if exact:
            known_lists = list(known_hits)
        else:
            text = _PLACEHOLDER.sub("\ufffc", text)
    prepass = None
    if prepasses is not None and known_lists is None:
        prepass = prepasses.get(text)
        if prepass is None:
            if len(prepasses) >= PREPASS_CACHE:
                prepasses.clear()
            prepass = prepasses[text] = keyword_prepass(point, text)
    decision = evaluate(
        point,
        text=text,
        candidate=candidate,
        facts=facts,
        now=now,
        session_state=session_state or None,
        session=session,
        known_hits=known_hits,
        known_lists=known_lists,
        prepass=prepass,
    )
    if candidate_invalid:
        decision = decision_for_invalid_output(point, decision, "recorded as invalid")
    return decision
