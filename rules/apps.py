from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RulesConfig(AppConfig):
    name = "rules"
    verbose_name = _("Decision rules")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from decision_service.health import readiness_checking
        from decision_service.metrics import metrics_collecting
        from rules import tasks  # noqa: F401 -- registers the tasks that services queue by name
        from rules.config.mcp_servers import drift_recorder_register
        from rules.config.metrics import configuration_metrics
        from rules.config.revisions import gate_register
        from rules.config.runtime import revision_readiness
        from rules.governance.gate import GATE
        from rules.governance.mcp_drift import mcp_drift_record

        gate_register(GATE)
        drift_recorder_register(mcp_drift_record)
        readiness_checking.connect(revision_readiness, dispatch_uid="rules.revision_readiness")
        metrics_collecting.connect(configuration_metrics, dispatch_uid="rules.configuration_metrics")
