import os

from django.core.wsgi import get_wsgi_application

from decision_service import tracing

# A server started through WSGI is a deployment: production settings unless told otherwise.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "decision_service.settings.production")
# Before the application is built: TracingMiddleware joins the chain only if tracing is on by then. Each
# gunicorn worker imports this module after its fork, so the exporter's thread is its own.
tracing.setup_from_env()
application = get_wsgi_application()
