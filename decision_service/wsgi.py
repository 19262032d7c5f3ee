import os

from django.core.wsgi import get_wsgi_application

# A server started through WSGI is a deployment: production settings unless told otherwise.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "decision_service.settings.production")
application = get_wsgi_application()
