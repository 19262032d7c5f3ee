"""Staff users' API tokens: made (or replaced) from the command line, shown once, stored hashed."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from decision_service.tokens import STAFF_TOKEN_PREFIX, new_token, token_hash
from rules.models import StaffToken


def staff_token_create(*, user: Any, rotate: bool = False) -> str:
    """A new API token for a staff user; the only time it is seen. ``rotate`` replaces an existing one
    (which stops working at once); without it, a user who has a token keeps it and this is refused."""
    if not user.is_active or not user.is_staff:
        raise ValidationError(f"{user.get_username()} is not an active staff user.")
    token = new_token(STAFF_TOKEN_PREFIX)
    with transaction.atomic():
        existing = StaffToken.objects.select_for_update().filter(user=user).first()
        if existing is not None and not rotate:
            raise ValidationError(f"{user.get_username()} already has a token; use --rotate to replace it.")
        if existing is None:
            existing = StaffToken(user=user)
        existing.token_hash = token_hash(token)
        existing.token_prefix = token[:12]
        existing.save()
    return token
