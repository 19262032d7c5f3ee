"""Admin form for webhook subscriptions: the kinds of event as checkboxes."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from agents.webhooks.models import EventKind, WebhookSubscription
from decision_service.admin.forms import AuditedModelForm


class WebhookSubscriptionForm(AuditedModelForm):
    url = forms.URLField(
        max_length=2000,
        assume_scheme="https",
        label=_("URL"),
        help_text=_(
            "Where deliveries are POSTed (http or https). Arbiter's workers call it: it must be a receiver you "
            "run, not an address inside your network that should not be reached."
        ),
    )
    event_kinds = forms.MultipleChoiceField(
        choices=EventKind.choices,
        widget=forms.CheckboxSelectMultiple,
        label=_("event kinds"),
        help_text=_("Breaker and change request events are the installation's: sent whichever agent subscribes."),
    )

    class Meta:
        model = WebhookSubscription
        fields = ["agent", "url", "description", "event_kinds", "is_active"]
        help_texts = {
            "is_active": _("An inactive subscription is sent nothing; deliveries due meanwhile are skipped."),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.initial["event_kinds"] = list(self.instance.event_kinds)
