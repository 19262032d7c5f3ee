from django.apps import AppConfig


class RulesConfig(AppConfig):
    name = "rules"
    verbose_name = "Decision rules"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from decision_service.health import readiness_checking
        from rules.runtime import revision_readiness

        readiness_checking.connect(revision_readiness, dispatch_uid="rules.revision_readiness")
