"""What the configuration shows Prometheus at scrape time (``decision_service.metrics.metrics_collecting``).

Read from the database when ``/metrics`` is asked for, never on the request path: two small queries (the
newest revision; open change requests by state), answered by whichever worker takes the scrape.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count
from prometheus_client.core import GaugeMetricFamily

from rules.models import OPEN_STATES, ChangeRequest, ConfigRevision


def configuration_metrics(**_: Any) -> list[GaugeMetricFamily]:
    head = ConfigRevision.objects.order_by("-number").values_list("number", "created_at").first()
    revision = GaugeMetricFamily(
        "arbiter_config_revision", "The current configuration revision (0 before the first configuration)."
    )
    revision.add_metric([], head[0] if head else 0)
    created = GaugeMetricFamily(
        "arbiter_config_revision_created_timestamp_seconds",
        "When the current configuration revision was cut (Unix time; 0 before the first).",
    )
    created.add_metric([], head[1].timestamp() if head else 0)
    counts = dict(
        ChangeRequest.objects.filter(state__in=OPEN_STATES).values_list("state").annotate(n=Count("id")).order_by()
    )
    open_requests = GaugeMetricFamily(
        "arbiter_change_requests_open",
        "Change requests not yet applied, by state: pending (waiting for approval), approved (waiting for apply_at).",
        labels=["state"],
    )
    for state in OPEN_STATES:
        open_requests.add_metric([str(state)], counts.get(state, 0))
    return [revision, created, open_requests]
