from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = _("Agents and sessions")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents import receivers
        from agents.runtimes import principal_cache
        from rules import signals
        from rules.runtime import engines

        engines.watch("agents", expression=principal_cache.agents_stamp, changed=principal_cache.clear)

        signals.point_deleting.connect(receivers.drop_deleted_point, dispatch_uid="agents.drop_deleted_point")
        signals.point_removal_notes.connect(receivers.removal_notes, dispatch_uid="agents.removal_notes")
        signals.machine_checking.connect(receivers.stranded_sessions, dispatch_uid="agents.stranded_sessions")
        signals.machine_deleting.connect(receivers.machine_has_sessions, dispatch_uid="agents.machine_has_sessions")
        signals.decision_log_purging.connect(receivers.purge_anomalies, dispatch_uid="agents.purge_anomalies")
        signals.decision_shown.connect(receivers.decision_anomalies, dispatch_uid="agents.decision_anomalies")
        signals.report_counting.connect(receivers.point_anomaly_counts, dispatch_uid="agents.point_anomaly_counts")
