from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RulesConfig(AppConfig):
    name = "rules"
    verbose_name = _("Decision rules")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from decision_service.health import readiness_checking
        from rules.runtime import revision_readiness

        readiness_checking.connect(revision_readiness, dispatch_uid="rules.revision_readiness")
