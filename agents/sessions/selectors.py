"""Reads of sessions: for an agent, for the admin's lists (open, ended, stuck, in a handoff state), one
session's timeline and its fields with their history."""

from __future__ import annotations

import datetime as dt
import heapq
import operator
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from typing import Any

from django.apps import apps
from django.db.models import BooleanField, Case, Q, QuerySet, Value, When
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from agents.errors import UnknownSession
from agents.sessions.fields import fields_missing_in, machine_field_specs
from agents.sessions.models import Anomaly, Session, Transition
from agents.sessions.services import AgentRef
from rules.engine.masking import WHOLE
from rules.models import DecisionRecord, StateMachine


def session_get_for_agent(*, agent: AgentRef, session_id: str) -> Session:
    session = Session.objects.select_related("machine", "claimed_by").filter(agent_id=agent.pk, key=session_id).first()
    if session is None:
        raise UnknownSession(f"This agent has no session '{session_id}'.")
    return session


def session_latest_anomaly_codes(session: Session, *, limit: int = 5) -> list[str]:
    return list(
        Anomaly.objects.filter(agent_id=session.agent_id, session_id=session.key)
        .order_by("-created_at", "-pk")
        .values_list("code", flat=True)[:limit]
    )


# --- sessions for the admin: lists, "stuck", the human queue, one session's timeline ---------------------
#
# "Stuck", "open" and "in a handoff state" depend on each session's machine (its terminal and handoff
# states, its timeouts). They are written as one (machine, state[, state_entered_at]) clause per machine
# and state, which the ``session_machine_state_idx`` index serves; machines are configuration, so there
# are few clauses.

STUCK_AFTER = dt.timedelta(minutes=10)
STUCK_HELP = format_lazy(
    _(
        "Stuck: in a state that is not terminal for longer than that state's timeout, or longer than "
        "{minutes} minutes in a state without a timeout (the handoff state included: nobody has taken the "
        "session over)."
    ),
    minutes=int(STUCK_AFTER.total_seconds() // 60),
)


def _machines() -> list[StateMachine]:
    return list(StateMachine.objects.only("pk", "key", "states", "handoff_state", "terminal_states", "timeouts"))


def _none() -> Q:
    return Q(pk__in=[])


def _any(clauses: list[Q]) -> Q:
    return reduce(operator.or_, clauses, _none())


def sessions_open_q(machines: list[StateMachine] | None = None) -> Q:
    """Sessions in one of their machine's declared states that is not terminal.

    A session left in a state its machine no longer declares matches neither this nor ``sessions_ended_q``.
    """
    clauses = []
    for machine in machines if machines is not None else _machines():
        open_states = [s for s in machine.states if s not in machine.terminal_states]
        if open_states:
            clauses.append(Q(machine_id=machine.pk, state__in=open_states))
    return _any(clauses)


def sessions_ended_q(machines: list[StateMachine] | None = None) -> Q:
    """Sessions in one of their machine's terminal states."""
    clauses = [
        Q(machine_id=machine.pk, state__in=list(machine.terminal_states))
        for machine in (machines if machines is not None else _machines())
        if machine.terminal_states
    ]
    return _any(clauses)


def sessions_in_handoff_q(machines: list[StateMachine] | None = None) -> Q:
    """Sessions in their own machine's handoff state (where a person takes over)."""
    clauses = [
        Q(machine_id=machine.pk, state=machine.handoff_state)
        for machine in (machines if machines is not None else _machines())
    ]
    return _any(clauses)


def state_stuck_after(machine: StateMachine, state: str) -> dt.timedelta | None:
    """How long a session may stay in ``state`` before it counts as stuck; None in a terminal state
    (and in a state the machine no longer declares, which the session page points out instead)."""
    if state in machine.terminal_states or state not in machine.states:
        return None
    seconds = machine.timeouts.get(state)
    if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds > 0:
        return dt.timedelta(seconds=float(seconds))
    return STUCK_AFTER


def sessions_stuck_q(*, now: dt.datetime, machines: list[StateMachine] | None = None) -> Q:
    """Sessions over their state's limit (see ``STUCK_HELP`` and ``state_stuck_after``)."""
    clauses = []
    for machine in machines if machines is not None else _machines():
        plain = []
        for state in machine.states:
            limit = state_stuck_after(machine, state)
            if limit is None:
                continue
            if limit == STUCK_AFTER:
                plain.append(state)
            else:
                clauses.append(Q(machine_id=machine.pk, state=state, state_entered_at__lte=now - limit))
        if plain:
            clauses.append(Q(machine_id=machine.pk, state__in=plain, state_entered_at__lte=now - STUCK_AFTER))
    return _any(clauses)


def session_is_stuck(session: Session, *, now: dt.datetime) -> bool:
    limit = state_stuck_after(session.machine, session.state)
    return limit is not None and now - session.state_entered_at >= limit


def session_list(*, now: dt.datetime | None = None) -> QuerySet[Session]:
    """Sessions with their agent and machine; with ``now``, each annotated ``stuck`` (see ``STUCK_HELP``)."""
    sessions = Session.objects.select_related("agent", "machine")
    if now is not None:
        stuck = When(sessions_stuck_q(now=now), then=Value(True))
        sessions = sessions.annotate(stuck=Case(stuck, default=Value(False), output_field=BooleanField()))
    return sessions


def session_states() -> list[str]:
    """Every state any machine declares, for filters (from configuration, not a DISTINCT over sessions)."""
    return sorted({s for states in StateMachine.objects.values_list("states", flat=True) for s in states or []})


@dataclass(frozen=True)
class TimelineEntry:
    """One event of a session as the admin's page shows it (model rows, for links): a transition, a
    decision, an anomaly, a queue event (claim, release) or a tool-call attempt — its start
    (``tool_invocation``) or its failure (``error_handled``): exactly one of the five is set.
    The agent API reads the same events through ``agents.sessions.timeline``."""

    kind: str  # "transition" | "decision" | "anomaly" | "queue" | "tool_invocation" | "error_handled"
    at: dt.datetime
    sequence_id: int
    transition: Transition | None = None
    decision: DecisionRecord | None = None
    anomaly: Anomaly | None = None
    # An agents.queue.models.QueueEvent: the queue builds on sessions, so sessions does not import it.
    queue_event: Any = None
    # An agents.tools.models.ToolAttempt with its call, read by name for the same reason.
    attempt: Any = None

    @property
    def seq(self) -> int | None:
        return self.transition.seq if self.transition is not None else None

    @property
    def tool_next(self) -> str | None:
        """What the error policy made of a failed attempt: ``retry`` when another attempt followed (or is
        due), ``give_up`` when the operation ended with it; None for any other event."""
        if self.kind != ERROR_HANDLED:
            return None
        call = self.attempt.call
        return "retry" if call.attempt > self.attempt.attempt or call.status == "retry_wait" else "give_up"


TOOL_INVOCATION, ERROR_HANDLED = "tool_invocation", "error_handled"


def _attempts(session: Session) -> QuerySet[Any]:
    """The session's tool-call attempts with their calls (``agents.tools`` builds on sessions: by name)."""
    return apps.get_model("agents", "ToolAttempt").objects.filter(call__session=session).select_related("call")


def session_timeline(session: Session, *, limit: int | None = None) -> list[TimelineEntry]:
    """The session's transitions, decisions, anomalies, queue events and tool-call attempts in one list,
    oldest first, in the service-wide order (``sequence_id``, ``decision_service.sequence``); with
    ``limit``, the latest ``limit`` events. Decisions and anomalies belong to the session when they name its
    agent and session id. An attempt is an event when it starts (``tool_invocation``, showing its outcome
    once reported) and, when it failed, one more when its result came (``error_handled``)."""
    attempts = _attempts(session)
    # A failed attempt: finished, and not "ok" (agents.tools.models.AttemptOutcome).
    failures = attempts.filter(result_sequence_id__isnull=False).exclude(outcome="ok")
    streams: list[Any] = [
        session.transitions.select_related("decision").order_by("-sequence_id"),
        DecisionRecord.objects.filter(agent_id=session.agent_id, session_id=session.key).order_by("-sequence_id"),
        Anomaly.objects.filter(agent_id=session.agent_id, session_id=session.key).order_by("-sequence_id"),
        session.queue_events.order_by("-sequence_id"),
        attempts.order_by("-sequence_id"),
        failures.order_by("-result_sequence_id"),
    ]
    # An event among the last ``limit`` of the merge is among the last ``limit`` of its own stream.
    moves, records, found, queued, started, failed = [
        list(reversed(stream[:limit] if limit is not None else stream)) for stream in streams
    ]
    merged = list(
        heapq.merge(
            [TimelineEntry("transition", t.created_at, t.sequence_id, transition=t) for t in moves],
            [TimelineEntry("decision", d.created_at, d.sequence_id, decision=d) for d in records],
            [TimelineEntry("anomaly", a.created_at, a.sequence_id, anomaly=a) for a in found],
            [TimelineEntry("queue", q.created_at, q.sequence_id, queue_event=q) for q in queued],
            [TimelineEntry(TOOL_INVOCATION, a.started_at, a.sequence_id, attempt=a) for a in started],
            [TimelineEntry(ERROR_HANDLED, a.finished_at, a.result_sequence_id, attempt=a) for a in failed],
            key=lambda e: e.sequence_id,
        )
    )
    return merged if limit is None else merged[-limit:]


def session_pk(*, agent_id: int | None, session_id: str) -> int | None:
    """The primary key of an agent's session, if it exists (for links from the logs)."""
    if agent_id is None or not session_id:
        return None
    return Session.objects.filter(agent_id=agent_id, key=session_id).values_list("pk", flat=True).first()


# --- one session's fields and where each value came from ---------------------------------------------------
#
# The history is read from the moves' rows (``Transition.fields_changed``): every write of a field is a
# move — a PATCH …/fields is one of kind ``fields`` that stays in its state — and each row names what it
# set (``None``: cleared), pii values already masked when written. A field's previous value is the one the
# move before it recorded. Values are masked again here with the machine as it is now (a field made
# ``pii`` after it was set, or no longer declared so nobody can say it is not personal data): the admin
# never shows what the declaration now calls personal data.

FIELD_HISTORY_LIMIT = 500  # field-setting moves read for one session page, the latest ones


@dataclass(frozen=True)
class FieldChange:
    """One move that set (``new``) or cleared (``cleared``) a field; ``old`` is the value before it, when
    known (``old_known``: the move that set it is among those read, or this is the field's first)."""

    seq: int
    at: dt.datetime
    kind: str
    actor: str
    from_state: str
    to_state: str
    decision_id: Any
    old: Any
    old_known: bool
    new: Any
    cleared: bool


@dataclass(frozen=True)
class SessionField:
    """A field of the session as staff may see it: declared by its machine or only held (no longer
    declared), its value masked where personal data, and its changes, oldest first."""

    name: str
    declared: bool
    type: str
    pii: bool
    present: bool
    value: Any
    required_in: tuple[str, ...]
    missing_here: bool  # the current state requires it and it is absent or invalid
    history: tuple[FieldChange, ...]


def field_masker(machine: StateMachine) -> Callable[[str, Any], Any]:
    """``shown(name, value)``: a field's value as staff may see it under ``machine`` as it is now (the
    session page's fields and its timeline both use it)."""
    specs = machine_field_specs(machine)

    def shown(name: str, value: Any) -> Any:
        if value is None:  # unset or cleared: that is no personal data
            return None
        spec = specs.get(name)
        return WHOLE if spec is None or spec.pii else value

    return shown


def _in_order(states: frozenset[str], order: list[str]) -> tuple[str, ...]:
    return (*(s for s in order if s in states), *sorted(states.difference(order)))


def session_fields_with_history(session: Session, *, limit: int = FIELD_HISTORY_LIMIT) -> list[SessionField]:
    """The session's fields (declared ones in declaration order, then any it holds that its machine no
    longer declares) with their current values and the moves that changed them, all masked for staff.

    Reads the latest ``limit`` moves that set a field; a change whose previous value was set by an older
    move than those has ``old_known=False``."""
    machine = session.machine
    specs = machine_field_specs(machine)
    shown = field_masker(machine)
    values = dict(session.field_values or {})
    moves = list(
        session.transitions.exclude(fields_changed={})
        .order_by("-seq")
        .only("seq", "created_at", "kind", "actor", "from_state", "to_state", "decision_id", "fields_changed")[
            : limit + 1
        ]
    )
    complete = len(moves) <= limit  # every field-setting move is read: a first change had no value before
    moves = list(reversed(moves[:limit]))
    history: dict[str, list[FieldChange]] = {}
    last: dict[str, Any] = {}
    for move in moves:
        for name, recorded in (move.fields_changed or {}).items():
            known = name in last or complete
            history.setdefault(name, []).append(
                FieldChange(
                    seq=move.seq,
                    at=move.created_at,
                    kind=move.kind,
                    actor=move.actor,
                    from_state=move.from_state,
                    to_state=move.to_state,
                    decision_id=move.decision_id,
                    old=shown(name, last.get(name)),
                    old_known=known,
                    new=shown(name, recorded),
                    cleared=recorded is None,
                )
            )
            last[name] = recorded
    missing = set(fields_missing_in(machine, values, session.state))
    names = [*specs, *sorted(n for n in {*values, *history} if n not in specs)]
    return [
        SessionField(
            name=name,
            declared=name in specs,
            type=specs[name].type if name in specs else "",
            pii=specs[name].pii if name in specs else False,
            present=values.get(name) is not None,
            value=shown(name, values.get(name)),
            required_in=_in_order(specs[name].required_in, machine.states) if name in specs else (),
            missing_here=name in missing,
            history=tuple(history.get(name, ())),
        )
        for name in names
    ]
