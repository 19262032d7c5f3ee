"""The staff API's reports: the decision-point map as JSON and as CSV (docs/report.md).

Staff API tokens only (``StaffApi``), of a user who may read the decision log (``rules.view_decisionrecord``),
as the admin's map page asks.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response

from decision_service.api.base import StaffApi, require_permission
from rules.reports.decision_map import days_parse, decision_map
from rules.reports.export import decision_map_csv

READ_MAP = "rules.view_decisionrecord"


def _report(request: Request) -> dict[str, Any]:
    require_permission(request, READ_MAP)
    days = days_parse(request.query_params.get("days"), empty_is_absent=False)
    return decision_map(days=days, point=request.query_params.get("point", ""))


class DecisionMapApi(StaffApi):
    query_parameters = ("days", "point")

    def get(self, request: Request) -> Response:
        return Response(_report(request))


class DecisionMapCsvApi(StaffApi):
    query_parameters = ("days", "point")

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # The body is CSV whatever the client accepts (refusals stay problem+json): never a 406.
        return super().perform_content_negotiation(request, force=True)

    def get(self, request: Request) -> HttpResponse:
        report = _report(request)
        response = HttpResponse(decision_map_csv(report).encode("utf-8"), content_type="text/csv; charset=utf-8")
        stamp = timezone.now().strftime("%Y%m%d-%H%M")
        response["Content-Disposition"] = f'attachment; filename="decision-map-{report["window"]["days"]}d-{stamp}.csv"'
        return response
