"""The staff API of the human queue: list the sessions waiting for a person, claim, release, return to
the bot, resolve. Staff API tokens only (``StaffApi``); the rules are the queue services'. Listing asks
for ``agents.view_session``, as the admin's queue page does; the steps for the queue permission (in the
services)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agents.errors import UnknownSession
from agents.queue.selectors import QUEUE_REASONS, human_queue_get, human_queue_list, human_queue_proposed_calls
from agents.queue.services import queue_claim, queue_release, queue_resolve, queue_return
from agents.sessions.handoff import session_handoff_reason
from agents.sessions.models import Session
from agents.sessions.services import Move
from decision_service.api.base import StaffApi, require_permission
from decision_service.api.fields import StrictCharField, StrictSerializer

QUEUE_LIST_MAX = 500
READ_QUEUE = "agents.view_session"


def queue_item(session: Session, *, now: Any = None, proposed: dict[str, Any] | None = None) -> dict[str, Any]:
    """One waiting session (annotated by ``session_human_queue``) as the API shows it; ``proposed``: the
    tool call it waits to have approved (``human_queue_proposed_calls``)."""
    now = now or timezone.now()
    return {
        "id": session.pk,
        "session_id": session.key,
        "agent": session.agent.name,
        "machine": session.machine.key,
        "state": session.state,
        "reason": session_handoff_reason(session),
        "waiting_seconds": round((now - session.state_entered_at).total_seconds(), 3),
        "claimed_by": session.claimed_by.get_username() if session.claimed_by else None,
        "proposed_call": _proposed(proposed),
    }


def _proposed(call: dict[str, Any] | None) -> dict[str, Any] | None:
    if call is None:
        return None
    keys = ("operation_id", "tool", "input", "risk", "state", "asked_at")
    return {key: call[key] for key in keys}


def _item(pk: int) -> dict[str, Any]:
    session = human_queue_get(pk=pk)
    if session is None:  # moved on between the write and this read
        raise UnknownSession(f"Session {pk} is no longer in the human queue.")
    return queue_item(session, proposed=human_queue_proposed_calls([session]).get(session.pk))


def _move_body(pk: int, move: Move) -> dict[str, Any]:
    key = Session.objects.filter(pk=pk).values_list("key", flat=True).first()
    return {"id": pk, "session_id": key, "from": move.from_state, "state": move.state, "seq": move.seq}


class _NoteSerializer(StrictSerializer):
    note = StrictCharField(max_length=2000, required=False, allow_blank=True, default="")


class _LeaveSerializer(StrictSerializer):
    state = StrictCharField(max_length=64)
    note = StrictCharField(max_length=2000, required=False, allow_blank=True, default="")


class _ResolveSerializer(_LeaveSerializer):
    note = StrictCharField(max_length=2000)


def _valid(serializer_class: type[serializers.Serializer], request: Request) -> Any:
    empty = request.META.get("CONTENT_LENGTH") in (None, "", "0") and "HTTP_TRANSFER_ENCODING" not in request.META
    serializer = serializer_class(data={} if empty else request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class QueueListApi(StaffApi):
    query_parameters = ("holder", "reason")

    def get(self, request: Request) -> Response:
        require_permission(request, READ_QUEUE)
        # Given, even empty, each must be one of its values (as the spec says); absent means no filter.
        holder = request.query_params.get("holder")
        reason = request.query_params.get("reason")
        problems: dict[str, list[str]] = {}
        if holder is not None and holder not in ("mine", "unclaimed", "claimed"):
            problems["holder"] = ["One of: mine, unclaimed, claimed."]
        if reason is not None and reason not in QUEUE_REASONS:
            problems["reason"] = [f"One of: {', '.join(QUEUE_REASONS)}."]
        if problems:
            raise serializers.ValidationError(problems)
        now = timezone.now()
        sessions = list(human_queue_list(holder=holder or "", user=request.user, reason=reason or "")[:QUEUE_LIST_MAX])
        proposed = human_queue_proposed_calls(sessions)
        return Response({"queue": [queue_item(s, now=now, proposed=proposed.get(s.pk)) for s in sessions]})


class QueueClaimApi(StaffApi):
    serializer_class = _NoteSerializer

    def post(self, request: Request, session_pk: int) -> Response:
        data = _valid(self.serializer_class, request)
        queue_claim(session_pk=session_pk, user=request.user, note=data["note"])
        return Response(_item(session_pk))


class QueueReleaseApi(StaffApi):
    serializer_class = _NoteSerializer

    def post(self, request: Request, session_pk: int) -> Response:
        data = _valid(self.serializer_class, request)
        queue_release(session_pk=session_pk, user=request.user, note=data["note"])
        return Response(_item(session_pk))


class QueueReturnApi(StaffApi):
    serializer_class = _LeaveSerializer

    def post(self, request: Request, session_pk: int) -> Response:
        data = _valid(self.serializer_class, request)
        move = queue_return(session_pk=session_pk, user=request.user, state=data["state"], note=data["note"])
        return Response(_move_body(session_pk, move))


class QueueResolveApi(StaffApi):
    serializer_class = _ResolveSerializer

    def post(self, request: Request, session_pk: int) -> Response:
        data = _valid(self.serializer_class, request)
        move = queue_resolve(session_pk=session_pk, user=request.user, state=data["state"], note=data["note"])
        return Response(_move_body(session_pk, move))
