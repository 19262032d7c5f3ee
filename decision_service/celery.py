import os
from typing import Any

from celery import Celery
from celery.signals import worker_init, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "decision_service.settings.local")

app = Celery("decision_service")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect(dispatch_uid="arbiter_tracing_setup")
@worker_process_init.connect(dispatch_uid="arbiter_tracing_setup_child")
def _tracing_setup(**kwargs: Any) -> None:
    """Trace as the environment says: in the worker (the solo and thread pools run tasks there), and in
    each process of the prefork pool (the SDK restarts its export thread after the fork; a second call
    changes nothing)."""
    from decision_service import tracing

    tracing.setup_from_env()


def task_queue(name: str, *args: Any) -> Any:
    """Queue the task registered under ``name`` (its stable dotted name, e.g. ``rules.tasks.x``).

    A service that queues work calls this instead of importing its app's tasks module, which imports the
    services (a thin task runs one): the import graph then has no circle between the two. Each app's
    ``AppConfig.ready()`` imports its tasks module, so the name is registered in every process, and the
    queued call behaves as ``task.delay`` would (eager in tests). An unknown name raises ``KeyError``."""
    return app.tasks[name].delay(*args)
