"""Every audited admin form asks why; the admin passes the answer to the services as ``reason``."""

from __future__ import annotations

from typing import Any, ClassVar

from django import forms
from django.utils.text import format_lazy
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _

# Stored as they are (in English, like every reason the services record); shown in the operator's
# language by ``reason_shown``. A reason someone typed is shown as typed.
DEFAULT_REASON = gettext_noop("Edited in admin")
DELETE_REASON = gettext_noop("Deleted in admin")
REVERT_REASON = gettext_noop("Reverted in admin to an earlier version")
DEFAULT_REASONS = frozenset((DEFAULT_REASON, DELETE_REASON, REVERT_REASON))
REASON_FIELD = "change_reason"

Problem = tuple[str | None, str]


def reason_shown(reason: object) -> str:
    """A recorded change reason for display: one of the admin's own defaults in the operator's language."""
    text = "" if reason is None else str(reason)
    return gettext(text) if text in DEFAULT_REASONS else text


class AuditedModelForm(forms.ModelForm):
    """A model form with a reason field, able to show what a service refused on the first pass."""

    change_reason = forms.CharField(
        label=_("Reason for this change"),
        required=False,
        max_length=500,
        widget=forms.TextInput(attrs={"size": 80, "placeholder": _(DEFAULT_REASON)}),
        help_text=format_lazy(
            _("Recorded in the history and in the configuration revision. Empty means “{default}”."),
            default=_(DEFAULT_REASON),
        ),
    )

    # Set by the admin (on a subclass) when a service refused this submission on the first pass.
    injected_problems: ClassVar[list[Problem]] = []

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or self.cleaned_data
        for name, message in self.injected_problems:
            if name is not None and name in self.fields:
                self.add_error(name, message)
            else:
                self.add_error(None, message if name is None else f"{name.replace('_', ' ')}: {message}")
        return cleaned
