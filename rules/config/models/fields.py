"""What the configuration models share: the key field and its validator, and the check that every text
a record holds can be stored."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.validators import RegexValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from rules.config.validators import KEY, KEY_MESSAGE, storable_problems

if TYPE_CHECKING:
    from django.utils.functional import _StrPromise

    StrOrPromise = str | _StrPromise

key_validator = RegexValidator(rf"^{KEY.pattern}$", KEY_MESSAGE)


def key_field(help_text: StrOrPromise = "") -> models.CharField:
    return models.CharField(max_length=64, validators=[key_validator], help_text=help_text, verbose_name=_("key"))


def text_problems(instance: models.Model) -> dict[str, str]:
    """Field → problem for every text field of ``instance`` (or text inside a JSON field) that cannot be stored."""
    fields = instance._meta.concrete_fields
    texts = (models.CharField, models.TextField, models.JSONField)
    return storable_problems({f.name: f.value_from_object(instance) for f in fields if isinstance(f, texts)})
