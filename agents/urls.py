from django.urls import path

from agents import apis

urlpatterns = [
    path("decisions", apis.DecisionCreateApi.as_view(), name="decision-create"),
    path("sessions", apis.SessionCreateApi.as_view(), name="session-create"),
    path("sessions/<str:session_id>", apis.SessionDetailApi.as_view(), name="session-detail"),
    path("sessions/<str:session_id>/transitions", apis.SessionTransitionApi.as_view(), name="session-transition"),
    path("sessions/<str:session_id>/actions", apis.SessionActionApi.as_view(), name="session-action"),
    path("sessions/<str:session_id>/interrupt", apis.SessionInterruptApi.as_view(), name="session-interrupt"),
    path("sessions/<str:session_id>/resume", apis.SessionResumeApi.as_view(), name="session-resume"),
    path("sessions/<str:session_id>/anomalies", apis.SessionAnomalyCreateApi.as_view(), name="session-anomaly"),
]
