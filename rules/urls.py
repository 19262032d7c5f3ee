from django.urls import path

from rules.config import apis as config_apis
from rules.decisions import apis
from rules.governance import apis as staff_apis
from rules.reports import apis as report_apis

urlpatterns = [
    path("config", config_apis.ConfigDocumentApi.as_view(), name="config-document"),
    path("decisions/<str:decision_id>", apis.DecisionDetailApi.as_view(), name="decision-detail"),
    path("decisions/<str:decision_id>/replay", apis.DecisionReplayApi.as_view(), name="decision-replay"),
    path("machines/<str:machine_key>", config_apis.MachineDetailApi.as_view(), name="machine-detail"),
    path("points", apis.PointListApi.as_view(), name="point-list"),
    path("points/<str:point_key>", apis.PointDetailApi.as_view(), name="point-detail"),
    path("reports/decision-map", report_apis.DecisionMapApi.as_view(), name="report-decision-map"),
    path("reports/decision-map.csv", report_apis.DecisionMapCsvApi.as_view(), name="report-decision-map-csv"),
    path("simulations", staff_apis.SimulationCreateApi.as_view(), name="simulation-create"),
    path("change-requests", staff_apis.ChangeRequestsApi.as_view(), name="change-requests"),
    path("change-requests/<int:request_id>", staff_apis.ChangeRequestDetailApi.as_view(), name="change-request-detail"),
    path(
        "change-requests/<int:request_id>/approve",
        staff_apis.ChangeRequestApproveApi.as_view(),
        name="change-request-approve",
    ),
    path(
        "change-requests/<int:request_id>/reject",
        staff_apis.ChangeRequestRejectApi.as_view(),
        name="change-request-reject",
    ),
    path(
        "change-requests/<int:request_id>/withdraw",
        staff_apis.ChangeRequestWithdrawApi.as_view(),
        name="change-request-withdraw",
    ),
]
