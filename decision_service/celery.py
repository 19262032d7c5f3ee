import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "decision_service.settings.local")

app = Celery("decision_service")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
