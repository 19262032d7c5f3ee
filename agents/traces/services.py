"""Recording what a runtime reports about its turn (``POST /api/v1/sessions/<id>/trace``).

``trace_record`` checks the events (``agents.traces.attributes``), samples them by turn
(``agents.traces.sampling``), leaves out those already recorded (by ``event_id``), masks their text and
inserts the rest in one statement. No session lock: a report changes nothing of the session, and each row
takes its ``sequence_id`` when it is written.

Masking: text is masked as the decision log masks it — with the masker of the decision point the event
names (``point``, one the agent may ask), else with the built-in patterns. The model's raw input and
output are stored only for a point whose ``store_raw_output`` is on; otherwise they are dropped and the
event keeps the rest (model, tokens, latency, status).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

from agents.sessions.selectors import session_get_for_agent
from agents.traces.attributes import RAW, RAW_MAX, event_problems
from agents.traces.models import TraceEvent
from agents.traces.sampling import sample
from decision_service.errors import InvalidRequest
from decision_service.principals import AgentPrincipal
from rules.config.scope import point_allowed_check
from rules.decisions.decide import point_current
from rules.engine.masking import Masker

_BUILTIN = Masker()


@dataclass(frozen=True)
class TraceRecorded:
    """What became of a report: ``received`` = ``kept`` (recorded now) + ``dropped`` (sampled out) +
    ``duplicates`` (recorded before, by event id)."""

    received: int
    kept: int
    dropped: int
    duplicates: int
    failed_turns: int
    sample_ratio: float


def _masking(agent: AgentPrincipal, point_key: str, cache: dict[str, tuple[Masker, bool]]) -> tuple[Masker, bool]:
    if not point_key:
        return _BUILTIN, False
    if point_key not in cache:
        point_allowed_check(agent=agent, point_key=point_key)
        point, _ = point_current(point_key=point_key)
        cache[point_key] = (point.masker, point.store_raw_output)
    return cache[point_key]


def _masked_attributes(attributes: dict[str, Any], masker: Masker, store_raw: bool, where: str) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for name, value in attributes.items():
        if name in RAW:
            if not store_raw:
                continue
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            if len(text) > RAW_MAX:
                raise InvalidRequest(
                    "An event's raw model input or output is too long.",
                    errors={f"{where}.attributes.{name}": [f"At most {RAW_MAX} characters of JSON text."]},
                )
            kept[name] = masker.mask(text).text
        elif isinstance(value, str):
            kept[name] = masker.mask(value).text
        elif isinstance(value, list):
            kept[name] = [masker.mask(v).text for v in value]
        else:
            kept[name] = value
    return kept


def _row(session_pk: int, event: dict[str, Any], masker: Masker, store_raw: bool, where: str) -> TraceEvent:
    kind = event["type"]
    attributes = event.get("attributes") or {}
    status = event["status"]
    name = attributes.get("gen_ai.request.model", "") if kind == "llm_call" else event.get("tool", "")
    duration = event.get("latency_ms") if kind == "llm_call" else event.get("duration_ms")
    error_code = event.get("error_code") or (attributes.get("error.type", "") if status == "error" else "")
    masked = _masked_attributes(attributes, masker, store_raw, where)
    if event.get("message"):
        masked["exception.message"] = masker.mask(event["message"]).text
    return TraceEvent(
        session_id=session_pk,
        type=kind,
        event_id=event.get("event_id", ""),
        turn_id=event.get("turn_id", ""),
        status=status,
        name=masker.mask(name).text[:128],
        point=event.get("point", ""),
        prompt_version=event.get("prompt_version", ""),
        duration_ms=duration,
        error_code=error_code[:64],
        attributes=masked,
    )


def trace_record(
    *, agent: AgentPrincipal, session_id: str, events: Sequence[dict[str, Any]], turn_id: str = ""
) -> TraceRecorded:
    """Record the events a runtime reports for one of its sessions (see the module docstring).

    ``turn_id`` is the batch's turn: given to each event that names none. Every event is checked before
    any is written; a refused report writes nothing.
    """
    problems: dict[str, list[str]] = {}
    seen: set[str] = set()
    prepared = []
    for i, event in enumerate(events):
        for field, message in event_problems(event).items():
            problems.setdefault(f"events[{i}].{field}", []).append(message)
        event_id = event.get("event_id")
        if event_id:
            if event_id in seen:
                problems.setdefault(f"events[{i}].event_id", []).append("Sent twice in one report.")
            seen.add(event_id)
        # Sampling reads the status: an error_handled, or an event with an error code, failed unless it says.
        failed = event.get("type") == "error_handled" or bool(event.get("error_code"))
        prepared.append(
            {
                **event,
                "turn_id": event.get("turn_id") or turn_id,
                "status": event.get("status") or ("error" if failed else "ok"),
            }
        )
    if problems:
        raise InvalidRequest("Some events cannot be recorded.", errors=problems)
    session = session_get_for_agent(agent=agent, session_id=session_id)
    cache: dict[str, tuple[Masker, bool]] = {}
    for event in prepared:  # every point checked, kept or not: the answer does not depend on the sample
        _masking(agent, event.get("point", ""), cache)
    ratio = float(settings.ARBITER_TRACE_SAMPLE_RATIO)
    sampled = sample(session_key=f"{agent.name}:{session.key}", events=prepared, ratio=ratio)
    ids = [e["event_id"] for e in sampled.kept if e.get("event_id")]
    known = set(
        TraceEvent.objects.filter(session=session, event_id__in=ids).values_list("event_id", flat=True) if ids else ()
    )
    index = {id(e): i for i, e in enumerate(prepared)}
    rows = []
    for event in sampled.kept:
        if event.get("event_id") and event["event_id"] in known:
            continue
        masker, store_raw = _masking(agent, event.get("point", ""), cache)
        rows.append(_row(session.pk, event, masker, store_raw, f"events[{index[id(event)]}]"))
    if rows:
        with transaction.atomic():
            # A report racing with its own retry: the unique (session, event_id) keeps one of each.
            TraceEvent.objects.bulk_create(rows, ignore_conflicts=True)
    return TraceRecorded(
        received=len(events),
        kept=len(rows),
        dropped=sampled.dropped,
        duplicates=len(sampled.kept) - len(rows),
        failed_turns=sampled.failed_turns,
        sample_ratio=ratio,
    )
