"""The agent API's reads of rules: logged decisions, their replays, and the points an agent may ask.

One view per operation; each calls a selector or service and shapes the answer with a presenter. The
decide operation itself (``POST /api/v1/decisions``) may move a session, so it lives in ``agents``.
"""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from decision_service.api.base import AgentApi, request_agent
from rules.config.scope import point_allowed_check
from rules.config.selectors import points_for_agent
from rules.decisions.decide import point_current
from rules.decisions.presenters import point_body, record_body, replay_body
from rules.decisions.replay import decision_replay
from rules.decisions.selectors import decision_get_for_agent


class DecisionDetailApi(AgentApi):
    def get(self, request: Request, decision_id: str) -> Response:
        record = decision_get_for_agent(agent_id=request_agent(request).pk, decision_id=decision_id)
        return Response(record_body(record))


class DecisionReplayApi(AgentApi):
    def get(self, request: Request, decision_id: str) -> Response:
        record = decision_get_for_agent(agent_id=request_agent(request).pk, decision_id=decision_id)
        return Response(replay_body(decision_replay(record=record)))


class PointListApi(AgentApi):
    def get(self, request: Request) -> Response:
        points, revision = points_for_agent(allowed=request_agent(request).points)
        return Response({"revision": revision, "points": [point_body(p, revision) for p in points]})


class PointDetailApi(AgentApi):
    def get(self, request: Request, point_key: str) -> Response:
        agent = request_agent(request)
        point, revision = point_current(point_key=point_key)
        point_allowed_check(agent=agent, point_key=point_key)
        return Response(point_body(point, revision))
