"""Settings shared by every environment. Differences come from ``decision_service.env``."""

from __future__ import annotations

from decision_service import env

BASE_DIR = env.BASE_DIR

# Only the local and test settings fall back to a generated key; production insists on SECRET_KEY.
SECRET_KEY = env.SECRET_KEY
DEBUG = bool(env.DEBUG)
ALLOWED_HOSTS = env.ALLOWED_HOSTS or ["127.0.0.1", "localhost", "[::1]"]
CSRF_TRUSTED_ORIGINS = env.CSRF_TRUSTED_ORIGINS

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "simple_history",
    "rules.apps.RulesConfig",
    "agents.apps.AgentsConfig",
]

MIDDLEWARE = [
    # The request's server span, around everything (a refusal below is part of the trace); it takes itself
    # out of the chain when tracing is off (decision_service/tracing.py).
    "decision_service.tracing.TracingMiddleware",
    # First: the request id, the time and the log line cover everything below, refusals included.
    "decision_service.request_log.RequestLogMiddleware",
    # Before anything asks for the host: probes answer whatever the Host, other requests for a host
    # not in ALLOWED_HOSTS get a 400 without a traceback in the log.
    "decision_service.api.middleware.HostCheckMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The admin's language: the language cookie (set by the switch in the admin's header), then
    # Accept-Language, then LANGUAGE_CODE. The API stays English (ApiEnglishMiddleware, right after).
    "django.middleware.locale.LocaleMiddleware",
    "decision_service.api.middleware.ApiEnglishMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Fallback only: services set the history user explicitly; this covers nothing they miss.
    "simple_history.middleware.HistoryRequestMiddleware",
    # Last, so that its refusals get the same headers as any other answer; none of the above reads
    # a request body, so it still refuses an API body it cannot or will not read before anything does.
    "decision_service.api.middleware.ApiBodyGuardMiddleware",
]

ROOT_URLCONF = "decision_service.urls"
WSGI_APPLICATION = "decision_service.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            # The one date-time format (``|when``) in every template, the admin's and the reports'.
            "builtins": ["decision_service.templatetags.arbiter_display"],
        },
    },
]

DATABASES = {"default": env.DATABASE}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
USE_I18N = True
USE_TZ = True
TIME_ZONE = env.TIME_ZONE
# Django ≥ 4 always localises, and a language's own formats win over DATETIME_FORMAT here: each
# language gets its module there, all with one format (2026-12-01 03:10:32 UTC, docs/operators.md).
FORMAT_MODULE_PATH = ["decision_service.formats"]

# One-time agent tokens travel in a message across a redirect: keep messages server-side, not in a
# signed (readable) cookie.
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env.STATIC_ROOT or BASE_DIR / "staticfiles"

REST_FRAMEWORK = {
    # Named by path: each token class lives with its tokens (staff tokens in rules, agent tokens in
    # agents), and the views that use them build on decision_service.api.base, which imports no app.
    # The staff class answers only for staff tokens (by their prefix) and leaves the rest to the next.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rules.governance.auth.StaffTokenAuthentication",
        "agents.runtimes.auth.AgentTokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "decision_service.api.errors.problem_exception_handler",
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "decision_service.api.negotiation.QuickNegotiation",
    # Per-agent rate limit (AgentRuntime.rate_per_minute): a token bucket, in Redis with a broker.
    "DEFAULT_THROTTLE_CLASSES": ["agents.runtimes.ratelimit.AgentRateThrottle"],
}

# Celery: with no broker configured, tasks run in-process so a new checkout needs nothing installed.
CELERY_BROKER_URL = env.CELERY_BROKER_URL or env.IN_PROCESS_BROKER_URL
CELERY_RESULT_BACKEND = env.CELERY_RESULT_BACKEND or None
CELERY_TASK_ALWAYS_EAGER = not env.CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TIMEZONE = "UTC"
# A task is acknowledged when it has run, not when a worker takes it, so one whose worker dies half-way
# (killed, out of memory, the machine lost) is run again: every task is idempotent (rules/tasks.py,
# agents/tasks.py). A pool process that dies mid-task gets its task handed back at once; a whole worker
# that dies leaves it to the broker, which hands it out again after CELERY_VISIBILITY_TIMEOUT.
# tests/faults/test_worker_killed.py kills a worker with SIGKILL mid-task.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env.CELERY_VISIBILITY_TIMEOUT}

# Engine backend: "native" (generated Python, the default) or "durable" (durable-rules, a second opinion).
ARBITER_ENGINE = env.ARBITER_ENGINE
# How often a process looks for a newer configuration revision (one indexed query at most this often).
ARBITER_REVISION_CHECK_SECONDS = env.ARBITER_REVISION_CHECK_SECONDS
# Decisions older than this are purged by the daily sweep (0 keeps them forever).
ARBITER_DECISION_RETENTION_DAYS = env.ARBITER_DECISION_RETENTION_DAYS
# Seed 000 §4.2: how long a session has to reach the state its decision maps to before the decision is
# counted a ghost failure (the decision-point map, /metrics). Positive seconds.
ARBITER_GHOST_FAILURE_SECONDS = env.ARBITER_GHOST_FAILURE_SECONDS
# Off: every decide with a session reads it first (agents.sessions.decide; the guess is checked in the
# INSERT and used only for points whose rules read nothing of a session but its state).
ARBITER_DECIDE_GUESS_SESSION_STATE = env.ARBITER_DECIDE_GUESS_SESSION_STATE
ARBITER_TRACE_SAMPLE_RATIO = env.ARBITER_TRACE_SAMPLE_RATIO
# The MCP gateway at /mcp (agents/mcp, docs/mcp.md).
ARBITER_MCP_APPROVAL_WAIT_S = env.ARBITER_MCP_APPROVAL_WAIT_S
ARBITER_MCP_CALL_DEADLINE_S = env.ARBITER_MCP_CALL_DEADLINE_S
ARBITER_MCP_THREADS = env.ARBITER_MCP_THREADS
# The largest request body the API reads (413 beyond). Sized from the schema's character limits, not the
# other way round: the longest request the schema bounds (a decision with every text field full: 32,704
# characters) is 392,753 bytes when each character is written as a 12-byte JSON escape (an emoji as
# "\ud83d\ude00", what json.dumps writes by default), and the rest, 128 KiB, is for the free-form
# members (facts, context, params). tests/api/test_body_limit.py derives the figure from
# docs/openapi.yaml and fails when the two drift apart; docs/api.md ("Limits") states both numbers.
ARBITER_MAX_REQUEST_BYTES = 512 * 1024
# A staff request carries a whole configuration document (the change request API).
ARBITER_MAX_STAFF_REQUEST_BYTES = 4 * 1024 * 1024
# Django refuses larger bodies before any parser sees them: let the staff limit through.
DATA_UPLOAD_MAX_MEMORY_SIZE = ARBITER_MAX_STAFF_REQUEST_BYTES + 1024
# Change governance (see rules/governance/change_requests.py and rules/governance/impact.py).
ARBITER_REQUIRED_APPROVALS = env.ARBITER_REQUIRED_APPROVALS
ARBITER_IMPACT_DECISIONS = env.ARBITER_IMPACT_DECISIONS
ARBITER_IMPACT_DAYS = env.ARBITER_IMPACT_DAYS
ARBITER_BASE_URL = env.ARBITER_BASE_URL
# Signed webhooks (agents.webhooks.delivery, docs/webhooks.md).
ARBITER_WEBHOOK_TIMEOUT_SECONDS = env.ARBITER_WEBHOOK_TIMEOUT_SECONDS
ARBITER_WEBHOOK_MAX_ATTEMPTS = env.ARBITER_WEBHOOK_MAX_ATTEMPTS
ARBITER_WEBHOOK_BACKOFF_SECONDS = env.ARBITER_WEBHOOK_BACKOFF_SECONDS
ARBITER_WEBHOOK_BACKOFF_MAX_SECONDS = env.ARBITER_WEBHOOK_BACKOFF_MAX_SECONDS
ARBITER_WEBHOOK_DISABLE_AFTER = env.ARBITER_WEBHOOK_DISABLE_AFTER
ARBITER_WEBHOOK_QUEUE = env.ARBITER_WEBHOOK_QUEUE

EMAIL_BACKEND = (
    "django.core.mail.backends.smtp.EmailBackend"
    if env.EMAIL_HOST
    else "decision_service.mail.LogEmailBackend"  # one log line a message (decision_service/mail.py)
)
EMAIL_HOST = env.EMAIL_HOST or "localhost"
EMAIL_PORT = env.EMAIL_PORT
EMAIL_HOST_USER = env.EMAIL_HOST_USER
EMAIL_HOST_PASSWORD = env.EMAIL_HOST_PASSWORD
EMAIL_USE_TLS = env.EMAIL_USE_TLS
DEFAULT_FROM_EMAIL = env.DEFAULT_FROM_EMAIL

CELERY_BEAT_SCHEDULE = {
    "purge-old-decisions": {"task": "rules.tasks.decision_log_purge", "schedule": 24 * 3600.0},
    # PostgreSQL: the log's partitions for this month and the next two (rules.decisions.partitions).
    "create-decision-partitions": {"task": "rules.tasks.decision_log_partitions_ensure", "schedule": 24 * 3600.0},
    # Per-state timeouts are seconds (seed 003: 30 s waiting for the model), so sweep often.
    "sweep-session-timeouts": {"task": "agents.tasks.session_timeouts_sweep", "schedule": 5.0},
    # Approved change requests with an apply_at go live within this long after their time.
    "apply-due-change-requests": {"task": "rules.tasks.change_requests_apply_due", "schedule": 30.0},
    # The decision-point map's daily rollups: closed days, the last two again for late rows.
    "refresh-decision-rollups": {"task": "rules.tasks.decision_rollups_refresh", "schedule": 3600.0},
    # Asks hourly; a snapshot is taken when the latest is 14 days old (rules/reports/snapshot_jobs.py).
    "decision-map-snapshot": {"task": "rules.tasks.decision_map_snapshot_if_due", "schedule": 3600.0},
    # Webhook deliveries whose task was never queued (a broker down when their event committed).
    "requeue-webhook-deliveries": {"task": "agents.tasks.webhook_deliveries_requeue", "schedule": 60.0},
}

# Who may read GET /metrics (decision_service/metrics.py).
ARBITER_METRICS_ALLOWED_CIDRS = env.ARBITER_METRICS_ALLOWED_CIDRS
ARBITER_METRICS_TOKEN = env.ARBITER_METRICS_TOKEN


def logging_config(log_format: str) -> dict[str, object]:
    """Everything to the console (stderr), one line a record: "json" for log collectors, or "plain"."""
    loggers: dict[str, object] = {}
    if CELERY_TASK_ALWAYS_EAGER:
        # Tasks run inside the caller (a request, a management command): Celery's "Task … succeeded in
        # …s: <its whole result>" would be printed in front of the caller's own output. Failures still
        # propagate to the caller (CELERY_TASK_EAGER_PROPAGATES). A worker keeps Celery's lines.
        loggers["celery.app.trace"] = {"level": "WARNING"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "plain": {
                "()": "decision_service.request_log.PlainFormatter",
                "format": "%(asctime)s %(levelname)s %(name)s %(message)s",
            },
            "json": {"()": "decision_service.request_log.JsonFormatter"},
        },
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": log_format}},
        "root": {"handlers": ["console"], "level": env.LOG_LEVEL},
        "loggers": loggers,
    }


LOGGING = logging_config("json" if env.ARBITER_LOG_FORMAT == "json" else "plain")
