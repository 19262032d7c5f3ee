from django.apps import AppConfig


class RulesConfig(AppConfig):
    name = "rules"
    verbose_name = "Decision rules"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from decision_service.health import readiness_checking
        from decision_service.metrics import metrics_collecting
        from rules.metrics import configuration_metrics
        from rules.runtime import revision_readiness

        readiness_checking.connect(revision_readiness, dispatch_uid="rules.revision_readiness")
        metrics_collecting.connect(configuration_metrics, dispatch_uid="rules.configuration_metrics")
