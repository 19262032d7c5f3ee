"""Admin form for agent runtimes."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from agents.runtimes.models import AgentRuntime
from decision_service.admin.forms import AuditedModelForm


class AgentRuntimeForm(AuditedModelForm):
    class Meta:
        model = AgentRuntime
        fields = ["name", "description", "points", "is_active", "rate_per_minute", "rate_burst"]
        widgets = {"description": forms.Textarea(attrs={"rows": 3, "cols": 60})}
        help_texts = {
            "name": _("Lower-case letters, digits and underscores; it cannot change later."),
            "points": _("The decision points this agent may ask."),
            "is_active": _("An inactive agent's token is refused."),
        }
