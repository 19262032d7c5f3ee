from django.urls import path

from rules import apis

urlpatterns = [
    path("decisions/<str:decision_id>", apis.DecisionDetailApi.as_view(), name="decision-detail"),
    path("decisions/<str:decision_id>/replay", apis.DecisionReplayApi.as_view(), name="decision-replay"),
    path("points", apis.PointListApi.as_view(), name="point-list"),
    path("points/<str:point_key>", apis.PointDetailApi.as_view(), name="point-detail"),
]
