"""Every environment variable Arbiter reads, read here and nowhere else.

Settings modules import the values from this module; domain code never looks at ``os.environ``. The one
family read elsewhere too is OpenTelemetry's ``OTEL_*`` (``otel_environ``): the SDK reads the exporter's
endpoint, headers and batching from the process environment itself, under the standard names.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

BASE_DIR = Path(__file__).resolve().parent.parent


def _str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def _bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


# SQLite refuses, rather than waits for, a transaction that read and then wants to write after another
# writer got in ("database is locked"). Taking the write lock at BEGIN makes concurrent requests queue.
_SQLITE: dict[str, Any] = {"transaction_mode": "IMMEDIATE", "timeout": 20}


def parse_database_url(url: str) -> dict[str, Any]:
    """Turn ``postgres://user:pass@host:port/name`` or ``sqlite:///path`` into a DATABASES entry."""
    parsed = urlparse(url)
    scheme = parsed.scheme.lower()
    if scheme in {"postgres", "postgresql", "pgsql"}:
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parsed.path.lstrip("/")) or "postgres",
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(parsed.port or ""),
            "CONN_MAX_AGE": _int("DATABASE_CONN_MAX_AGE", 60),
            # A "SELECT 1" before each request's first query (psycopg's own cursor: no query counter sees
            # it) that makes a restarted server invisible; DATABASE_CONN_HEALTH_CHECKS=false saves that
            # round trip (bench/RESULTS.md) at the price of one failed request per worker after a restart.
            "CONN_HEALTH_CHECKS": _bool("DATABASE_CONN_HEALTH_CHECKS", True),
            # A server that does not answer (a host gone, a dropped packet) costs a request this many
            # seconds, then a 503 database_unavailable, instead of the operating system's minutes.
            "OPTIONS": {
                "connect_timeout": _int("DATABASE_CONNECT_TIMEOUT", 3),
                # Django's own cursors bind on the client and never prepare; this lets the few statements
                # run on a server-binding cursor (decision_service/db.py: the decide path's session
                # statements and log insert) be prepared per connection (they ask for it; only None,
                # which forbids it, matters here).
                # DATABASE_PREPARED_STATEMENTS=false behind a pooler in transaction mode that does not
                # carry prepared statements (PgBouncer before 1.21, or with max_prepared_statements = 0).
                "prepare_threshold": 5 if _bool("DATABASE_PREPARED_STATEMENTS", True) else None,
            },
        }
    if scheme == "sqlite":
        # sqlite:///relative.db and sqlite:////absolute/path.db, as in the common URL convention.
        path = parsed.path[1:] if parsed.path.startswith("/") else parsed.path
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": path or str(BASE_DIR / "db.sqlite3"),
            "OPTIONS": _SQLITE,
        }
    raise ValueError(f"DATABASE_URL: unsupported scheme {scheme!r} (use postgres:// or sqlite:///)")


def database_pooled(database: dict[str, Any], *, max_size: int, timeout: float) -> dict[str, Any]:
    """``database`` (PostgreSQL) with its connections taken from a pool of ``max_size`` at most: Django
    returns a connection to it at the end of each request (``CONN_MAX_AGE`` 0, which Django's pool
    requires), and a request that waits ``timeout`` seconds for one fails with psycopg's ``PoolTimeout``,
    which the API answers ``503 database_unavailable`` (decision_service/api/errors.py). Each pooled
    connection keeps its prepared statements (decision_service/db.py) from request to request."""
    return {
        **database,
        "CONN_MAX_AGE": 0,
        "OPTIONS": {
            **database.get("OPTIONS", {}),
            # Two are opened when the process first needs one; the pool grows on demand up to max_size
            # and gives back what stayed idle for ten minutes (psycopg's max_idle).
            "pool": {"min_size": min(2, max_size), "max_size": max_size, "timeout": timeout},
        },
    }


def _local_secret_key() -> str:
    """A key generated once and kept beside the project, so local sessions survive restarts."""
    path = BASE_DIR / ".secret_key"
    if path.exists():
        return path.read_text().strip()
    key = secrets.token_urlsafe(50)
    path.write_text(key)
    path.chmod(0o600)
    return key


DATABASE_URL = _str("DATABASE_URL")
DATABASE: dict[str, Any] = (
    parse_database_url(DATABASE_URL)
    if DATABASE_URL
    else {"ENGINE": "django.db.backends.sqlite3", "NAME": str(BASE_DIR / "db.sqlite3"), "OPTIONS": _SQLITE}
)

SECRET_KEY = _str("SECRET_KEY")
# None when unset, so each settings module can choose its own default.
DEBUG: bool | None = _bool("DEBUG") if os.environ.get("DEBUG", "").strip() else None
ALLOWED_HOSTS = [h.strip() for h in _str("ALLOWED_HOSTS", "").split(",") if h.strip()]
CSRF_TRUSTED_ORIGINS = [h.strip() for h in _str("CSRF_TRUSTED_ORIGINS", "").split(",") if h.strip()]

CELERY_BROKER_URL = _str("CELERY_BROKER_URL")
# The broker setting when the environment names none (tasks then run in-process): kombu's in-memory
# transport, named with a host, as kombu warns "No hostname was supplied" about a bare "memory://".
IN_PROCESS_BROKER_URL = "memory://localhost/"
CELERY_RESULT_BACKEND = _str("CELERY_RESULT_BACKEND")
# Redis broker: a task taken by a worker that died without acknowledging it (late acknowledgement) is
# handed out again this many seconds after it was taken. Longer than the longest task, or a task still
# running is handed to a second worker too (harmless, the tasks are idempotent, but wasted work).
CELERY_VISIBILITY_TIMEOUT = _int("CELERY_VISIBILITY_TIMEOUT", 3600)
REDIS_URL = _str("REDIS_URL")

TIME_ZONE = _str("TIME_ZONE", "UTC")

# Serving (bin/serve, decision_service/serving.py, decision_service/settings/production.py).
# Where gunicorn listens, and how many worker processes (0: two per usable core plus one).
ARBITER_ADDR = _str("ARBITER_ADDR", "127.0.0.1:8000")
WEB_CONCURRENCY = _int("WEB_CONCURRENCY", 0)
# Threads per worker process (gunicorn's gthread workers): a long-polling GET …/changes sleeps in one of
# them, not in a whole process (decision_service/serving.py, bench/changes). 1: sync workers.
ARBITER_THREADS = _int("ARBITER_THREADS", 100)
# PostgreSQL connections of a process with the production settings (bin/serve's workers): at most this
# many, shared by its threads through psycopg's pool; a thread takes one for a request and gives it back
# at the request's end (decision_service/settings/production.py). 0: no pool, each thread keeps a
# connection of its own for DATABASE_CONN_MAX_AGE, up to workers × threads of them.
ARBITER_DB_POOL_MAX = _int("ARBITER_DB_POOL_MAX", 10)
# Seconds a request waits for a pooled connection when all are taken, then 503 database_unavailable: as
# long as a new connection may take (DATABASE_CONNECT_TIMEOUT). While the database is down every request
# waits this long, where without the pool a refused connection is answered at once (bench/RESULTS.md).
ARBITER_DB_POOL_TIMEOUT = float(_str("ARBITER_DB_POOL_TIMEOUT", "3"))

# Where collectstatic puts the files WhiteNoise serves.
STATIC_ROOT = _str("STATIC_ROOT")
# The header a TLS-terminating proxy sets to "https" (e.g. X-Forwarded-Proto). Unset: no header is
# trusted, since without such a proxy in front any client could claim a secure connection.
SECURE_PROXY_SSL_HEADER = _str("SECURE_PROXY_SSL_HEADER")
# HTTPS behaviour of the production settings; the defaults are what `manage.py check --deploy` asks for.
SECURE_SSL_REDIRECT = _bool("SECURE_SSL_REDIRECT", True)
SECURE_HSTS_SECONDS = _int("SECURE_HSTS_SECONDS", 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = _bool("SECURE_HSTS_PRELOAD", True)

ARBITER_ENGINE = _str("ARBITER_ENGINE", "native")
ARBITER_REVISION_CHECK_SECONDS = float(_str("ARBITER_REVISION_CHECK_SECONDS", "0.5"))
ARBITER_DECISION_RETENTION_DAYS = _int("ARBITER_DECISION_RETENTION_DAYS", 180)
# A decision whose mapped state its session has not reached this long after it is a ghost failure
# (agents/sessions/ghosts.py). One value for every point: a runtime moves right after it is told to.
ARBITER_GHOST_FAILURE_SECONDS = _int("ARBITER_GHOST_FAILURE_SECONDS", 300)
# A decide with a session it does not move may evaluate in the state its process last saw the session in
# and fold the read into the log INSERT (PostgreSQL; bench/RESULTS.md, "The session guess").
ARBITER_DECIDE_GUESS_SESSION_STATE = _bool("ARBITER_DECIDE_GUESS_SESSION_STATE", True)
# Runtime-reported trace events (agents/traces/sampling.py): a turn without an error is kept at this ratio
# (0 to 1); a failed turn is kept always. Seed 000 §3.4: 1%.
ARBITER_TRACE_SAMPLE_RATIO = min(max(float(_str("ARBITER_TRACE_SAMPLE_RATIO", "0.01")), 0.0), 1.0)
# The MCP gateway (agents/mcp, docs/mcp.md): how long a tools/call waits for a person's approval before it
# answers (0: at once), the deadline of one tools/call with its retries, and the threads its handlers run
# Django work in (per process; each keeps a database connection).
ARBITER_MCP_APPROVAL_WAIT_S = float(_str("ARBITER_MCP_APPROVAL_WAIT_S", "0"))
ARBITER_MCP_CALL_DEADLINE_S = float(_str("ARBITER_MCP_CALL_DEADLINE_S", "30"))
ARBITER_MCP_THREADS = _int("ARBITER_MCP_THREADS", 8)
LOG_LEVEL = _str("LOG_LEVEL", "INFO")
# "json" (one JSON object a line) or "plain"; unset: JSON in the production settings, plain elsewhere.
ARBITER_LOG_FORMAT = _str("ARBITER_LOG_FORMAT").lower()

# Who may read GET /metrics: client addresses (CIDRs, comma-separated), and a bearer token when one is set.
ARBITER_METRICS_ALLOWED_CIDRS = [
    c.strip() for c in _str("ARBITER_METRICS_ALLOWED_CIDRS", "127.0.0.0/8,::1/128").split(",") if c.strip()
]
ARBITER_METRICS_TOKEN = _str("ARBITER_METRICS_TOKEN")
# Set by bin/serve for gunicorn (prometheus-client reads it too): where the worker processes keep their
# metrics so that a scrape adds them up. Unset: one process, the in-process registry.
PROMETHEUS_MULTIPROC_DIR = _str("PROMETHEUS_MULTIPROC_DIR")
# Set by bin/serve when it made PROMETHEUS_MULTIPROC_DIR itself: gunicorn removes it when it exits.
ARBITER_METRICS_DIR_TEMPORARY = _bool("ARBITER_METRICS_DIR_TEMPORARY")

# Change governance: approvals a high-risk change needs (from people other than its author), and how
# much recent traffic its impact preview replays.
ARBITER_REQUIRED_APPROVALS = _int("ARBITER_REQUIRED_APPROVALS", 1)
ARBITER_IMPACT_DECISIONS = _int("ARBITER_IMPACT_DECISIONS", 10_000)
ARBITER_IMPACT_DAYS = _int("ARBITER_IMPACT_DAYS", 30)
# Where people reach the service (links in e-mails).
ARBITER_BASE_URL = _str("ARBITER_BASE_URL", "http://127.0.0.1:8000")

# Signed webhooks (docs/webhooks.md): the receiver's time to answer, attempts per delivery and the backoff
# between them (seconds, doubling from the first, capped), failed deliveries in a row that disable a
# subscription, and the Celery queue deliveries go to (unset: the default queue).
ARBITER_WEBHOOK_TIMEOUT_SECONDS = float(_str("ARBITER_WEBHOOK_TIMEOUT_SECONDS", "10"))
ARBITER_WEBHOOK_MAX_ATTEMPTS = _int("ARBITER_WEBHOOK_MAX_ATTEMPTS", 8)
ARBITER_WEBHOOK_BACKOFF_SECONDS = float(_str("ARBITER_WEBHOOK_BACKOFF_SECONDS", "30"))
ARBITER_WEBHOOK_BACKOFF_MAX_SECONDS = float(_str("ARBITER_WEBHOOK_BACKOFF_MAX_SECONDS", "3600"))
ARBITER_WEBHOOK_DISABLE_AFTER = _int("ARBITER_WEBHOOK_DISABLE_AFTER", 5)
ARBITER_WEBHOOK_QUEUE = _str("ARBITER_WEBHOOK_QUEUE")

# E-mail: printed to the console unless an SMTP host is given.
EMAIL_HOST = _str("EMAIL_HOST")
EMAIL_PORT = _int("EMAIL_PORT", 25)
EMAIL_HOST_USER = _str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = _str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = _bool("EMAIL_USE_TLS")
DEFAULT_FROM_EMAIL = _str("DEFAULT_FROM_EMAIL", "arbiter@localhost")


def local_secret_key() -> str:
    return SECRET_KEY or _local_secret_key()


def otel_environ() -> dict[str, str]:
    """The standard OpenTelemetry variables (``OTEL_*``), for ``decision_service.tracing``; docs/observability.md."""
    return {k: v for k, v in os.environ.items() if k.startswith("OTEL_")}
