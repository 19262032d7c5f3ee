from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = _("Agents and sessions")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from agents import receivers, tasks  # noqa: F401 - registers the tasks services queue by name
        from agents.queue import timeline as queue_timeline
        from agents.queue.selectors import proposed_calls_asking
        from agents.runtimes import principal_cache
        from agents.sessions import timeline_streams as sessions_timeline
        from agents.sessions.ghosts import ghost_failure_metrics, ghost_failures_by_point
        from agents.sessions.timeline import timeline_stream_register
        from agents.tools import timeline as tools_timeline
        from agents.tools.approvals import proposed_calls
        from agents.traces import selectors as traces_timeline
        from agents.webhooks import emit as webhooks
        from decision_service.metrics import metrics_collecting
        from decision_service.sequence import ensure_event_sequence
        from rules import hooks
        from rules.config.runtime import engines

        # The event sequence's triggers, again after every migrate: SQLite drops them with a rebuilt table.
        post_migrate.connect(ensure_event_sequence, sender=self, dispatch_uid="agents.ensure_event_sequence")
        engines.watch("agents", expression=principal_cache.agents_stamp, changed=principal_cache.clear)
        engines.watch("webhooks", expression=webhooks.subscriptions_stamp, changed=webhooks.clear)

        # What rules asks of agents (rules.hooks): agents answers, rules never imports agents.
        hooks.point_deleting.register(receivers.drop_deleted_point, uid="agents.drop_deleted_point")
        hooks.point_removal_notes.register(receivers.removal_notes, uid="agents.removal_notes")
        hooks.machine_checking.register(receivers.stranded_sessions, uid="agents.stranded_sessions")
        hooks.machine_deleting.register(receivers.machine_has_sessions, uid="agents.machine_has_sessions")
        hooks.decision_log_purging.register(receivers.purge_anomalies, uid="agents.purge_anomalies")
        hooks.decision_shown.register(receivers.decision_anomalies, uid="agents.decision_anomalies")
        hooks.report_counting.register(receivers.point_anomaly_counts, uid="agents.point_anomaly_counts")
        hooks.report_ghost_failures.register(ghost_failures_by_point, uid="agents.ghost_failures_by_point")
        metrics_collecting.connect(ghost_failure_metrics, dispatch_uid="agents.ghost_failure_metrics")
        # The human queue shows the tool call a session waits to have approved (agents.tools is above it).
        proposed_calls_asking.register(proposed_calls, uid="agents.tools.proposed_calls")
        # Change requests are rules'; webhook subscriptions are told of them here.
        hooks.change_request_stepped.register(webhooks.change_request_stepped, uid="agents.webhooks.change_requests")

        # A session's timeline (GET …/timeline, …/changes): each room adds its own events; sessions import none of them.
        for name, stream, newer in (
            ("moves", sessions_timeline.moves_stream, sessions_timeline.moves_newer),
            ("decisions", sessions_timeline.decisions_stream, sessions_timeline.decisions_newer),
            ("anomalies", sessions_timeline.anomalies_stream, sessions_timeline.anomalies_newer),
            ("queue_events", queue_timeline.queue_events_stream, queue_timeline.queue_events_newer),
            ("tool_attempts", tools_timeline.attempts_stream, tools_timeline.attempts_newer),
            ("tool_results", tools_timeline.results_stream, tools_timeline.results_newer),
            ("reported", traces_timeline.trace_events_after, traces_timeline.trace_events_newer),
        ):
            timeline_stream_register(name, stream, newer=newer)
