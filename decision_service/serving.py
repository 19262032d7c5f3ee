"""gunicorn's configuration for bin/serve (``gunicorn -c python:decision_service.serving``).

Sync workers: a decide is a short CPU-and-database request, and Django's ORM is synchronous. The
default count is gunicorn's own rule of thumb, two per usable core plus one, so that a worker waiting
on PostgreSQL leaves the core to another; bench/http/ measures it (bench/RESULTS.md).
"""

from __future__ import annotations

import os

from decision_service import env


def usable_cores() -> int:
    """Cores this process may run on (a container's CPU set, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


bind = [env.ARBITER_ADDR]
workers = env.WEB_CONCURRENCY or 2 * usable_cores() + 1
threads = max(1, env.ARBITER_THREADS)
worker_class = "gthread" if threads > 1 else "sync"
wsgi_app = "decision_service.wsgi:application"
# Heartbeat files in memory rather than on a possibly slow disk.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None  # noqa: S108
accesslog = None
errorlog = "-"
# Recycle workers now and then so a slow leak cannot grow forever; jitter keeps them from restarting together.
max_requests = 50_000
max_requests_jitter = 5_000
# gunicorn's runtime control socket (one fixed path per user) would clash between instances, and
# nothing here uses it; signals still work.
control_socket_disable = True


# Metrics of several workers (decision_service/metrics.py): bin/serve sets PROMETHEUS_MULTIPROC_DIR and
# empties it before gunicorn starts. prometheus-client is imported here only inside the hooks, so that the
# master never holds a registry that forked workers would inherit.
def child_exit(server: object, worker: object) -> None:
    """A worker exited (recycled, killed): its live gauges go; its counts stay in the totals."""
    if env.PROMETHEUS_MULTIPROC_DIR:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)  # type: ignore[attr-defined]


def on_exit(server: object) -> None:
    """The server stops: a metrics directory bin/serve made for this run goes with it."""
    if env.PROMETHEUS_MULTIPROC_DIR and env.ARBITER_METRICS_DIR_TEMPORARY:
        import shutil

        shutil.rmtree(env.PROMETHEUS_MULTIPROC_DIR, ignore_errors=True)
