from django.urls import path

from agents.queue import apis as queue_apis
from agents.sessions import apis, timeline_apis
from agents.tools import apis as tool_apis
from agents.tools import approval_apis, breaker_apis
from agents.traces import apis as trace_apis

urlpatterns = [
    # The runtime's hottest operations first: Django tries the routes in order (bench/RESULTS.md,
    # "The check's last cuts"). No two routes here match the same path, so the order changes nothing else.
    path("decisions", apis.DecisionCreateApi.as_view(), name="decision-create"),
    path("sessions/<str:session_id>/tool-calls", tool_apis.ToolCallCreateApi.as_view(), name="tool-call-create"),
    path("tool-calls/<str:operation_id>/result", tool_apis.ToolCallResultApi.as_view(), name="tool-call-result"),
    path("sessions", apis.SessionCreateApi.as_view(), name="session-create"),
    path("sessions/<str:session_id>", apis.SessionDetailApi.as_view(), name="session-detail"),
    path("sessions/<str:session_id>/transitions", apis.SessionTransitionApi.as_view(), name="session-transition"),
    path("sessions/<str:session_id>/fields", apis.SessionFieldsApi.as_view(), name="session-fields"),
    path("sessions/<str:session_id>/events", apis.SessionEventApi.as_view(), name="session-event"),
    # The whitelist (agents.sessions), and an action's params against its tool's contract (agents.tools).
    path("sessions/<str:session_id>/actions", tool_apis.ToolActionApi.as_view(), name="session-action"),
    path("sessions/<str:session_id>/interrupt", apis.SessionInterruptApi.as_view(), name="session-interrupt"),
    path("sessions/<str:session_id>/resume", apis.SessionResumeApi.as_view(), name="session-resume"),
    path("sessions/<str:session_id>/timeline", timeline_apis.SessionTimelineApi.as_view(), name="session-timeline"),
    path("sessions/<str:session_id>/trace", trace_apis.SessionTraceApi.as_view(), name="session-trace"),
    path("sessions/<str:session_id>/changes", timeline_apis.SessionChangesApi.as_view(), name="session-changes"),
    path("sessions/<str:session_id>/anomalies", apis.SessionAnomalyCreateApi.as_view(), name="session-anomaly"),
    path("queue", queue_apis.QueueListApi.as_view(), name="queue-list"),
    path("queue/<int:session_pk>/claim", queue_apis.QueueClaimApi.as_view(), name="queue-claim"),
    path("queue/<int:session_pk>/release", queue_apis.QueueReleaseApi.as_view(), name="queue-release"),
    path("queue/<int:session_pk>/return", queue_apis.QueueReturnApi.as_view(), name="queue-return"),
    path("queue/<int:session_pk>/resolve", queue_apis.QueueResolveApi.as_view(), name="queue-resolve"),
    path("tools/breakers", breaker_apis.BreakerListApi.as_view(), name="tool-breaker-list"),
    path("tools/<str:name>/breaker", breaker_apis.BreakerChangeApi.as_view(), name="tool-breaker-change"),
    path("queue/<int:session_pk>/approve", approval_apis.QueueApproveApi.as_view(), name="queue-approve"),
    path("queue/<int:session_pk>/reject", approval_apis.QueueRejectApi.as_view(), name="queue-reject"),
]
