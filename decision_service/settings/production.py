"""Production: refuses to start without an explicit SECRET_KEY and ALLOWED_HOSTS; HTTPS only.

`manage.py check --deploy` with these settings reports nothing (tests/test_serve.py). Arbiter is meant
to sit behind a TLS-terminating proxy: name the header it sets in SECURE_PROXY_SSL_HEADER.
"""

from django.core.exceptions import ImproperlyConfigured

from decision_service import env
from decision_service.settings.base import *  # noqa: F403
from decision_service.settings.base import MIDDLEWARE, logging_config

if not env.SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set in the environment for production settings")
if not env.ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set in the environment for production settings")

SECRET_KEY = env.SECRET_KEY
DEBUG = False
ALLOWED_HOSTS = env.ALLOWED_HOSTS

SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_SSL_REDIRECT = env.SECURE_SSL_REDIRECT
# Prometheus and the orchestrator's probes talk to the server itself, over plain HTTP, not through the TLS
# proxy: /metrics, /healthz and /readyz are answered there rather than redirected (who may read the
# metrics: ARBITER_METRICS_ALLOWED_CIDRS, ARBITER_METRICS_TOKEN; the probes tell nothing private).
SECURE_REDIRECT_EXEMPT = [r"^metrics$", r"^healthz$", r"^readyz$"]
# Sent only over HTTPS. includeSubDomains covers the names under the host Arbiter is served on, and
# preload only matters once the domain is submitted to the browsers' list; both can be turned off.
SECURE_HSTS_SECONDS = env.SECURE_HSTS_SECONDS
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.SECURE_HSTS_INCLUDE_SUBDOMAINS
SECURE_HSTS_PRELOAD = env.SECURE_HSTS_PRELOAD
# PostgreSQL connections bounded per process (ARBITER_DB_POOL_MAX): with gthread workers, each of a
# worker's threads would otherwise keep a connection of its own (README, "Serve it in production").
if env.ARBITER_DB_POOL_MAX > 0 and env.DATABASE["ENGINE"] == "django.db.backends.postgresql":
    DATABASES = {
        "default": env.database_pooled(
            env.DATABASE, max_size=env.ARBITER_DB_POOL_MAX, timeout=env.ARBITER_DB_POOL_TIMEOUT
        )
    }

if env.SECURE_PROXY_SSL_HEADER:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + env.SECURE_PROXY_SSL_HEADER.upper().replace("-", "_"), "https")

# Static files (the admin's) served by the application itself, compressed and cache-busted, from
# what `manage.py collectstatic` (run by bin/serve) gathered into STATIC_ROOT.
# Right after SecurityMiddleware, so that its redirect and headers apply to static files too.
_after = MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1
MIDDLEWARE = [*MIDDLEWARE[:_after], "whitenoise.middleware.WhiteNoiseMiddleware", *MIDDLEWARE[_after:]]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# One JSON object a line for the log collector, unless ARBITER_LOG_FORMAT=plain.
LOGGING = logging_config("plain" if env.ARBITER_LOG_FORMAT == "plain" else "json")
