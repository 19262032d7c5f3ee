"""gunicorn's configuration for bin/serve (``gunicorn -c python:decision_service.serving``).

Worker processes: gunicorn's own rule of thumb, two per usable core plus one, so that a worker waiting
on PostgreSQL leaves the core to another; bench/http/ measures it (bench/RESULTS.md). Each runs
``ARBITER_THREADS`` threads (gthread workers; 1: sync workers, one request per process): a runtime's
long poll (``GET …/changes``) sleeps for up to 30 s, and with sync workers a few hundred of them took
every process and starved the decides; in a thread of its own, holding no database connection while it
sleeps (agents.sessions.changes), it costs the decides little — bench/changes/ measures both
(bench/RESULTS.md). Django's ORM is synchronous and the GIL lets one thread of a process run Python at a
time; the threads still cost every request some CPU (on two cores, bench/http: a decide's server CPU
2.45 ms with sync workers against 3.32 with gthread ones, bare's 1.65 against 2.01). On PostgreSQL the
threads of a worker share a pool of ``ARBITER_DB_POOL_MAX`` connections (decision_service/settings/
production.py; README: PostgreSQL connections), so the threads do not multiply the connections.
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
# A gthread worker takes new connections while it has fewer than this, free threads or not: at its thread
# count, a worker whose threads all wait in long polls leaves new connections to the others.
worker_connections = threads
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
