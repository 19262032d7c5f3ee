"""Who a management command acts as. The shell has no login: whoever runs a command names the user, and
is trusted to (docs/threat-model.md). What can be checked is that the name is of someone who could make
the change in the admin — an existing, active staff user — and the history records that it came from
the shell (``change_request_via``)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.management.base import CommandError


def shell_user(username: str | None) -> AbstractBaseUser:
    """The active staff user named by ``--user``; a one-line ``CommandError`` otherwise."""
    if not username:
        raise CommandError("Name the staff user the change is made as: --user USERNAME.")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"There is no user '{username}'.")
    if not user.is_active:
        raise CommandError(f"User '{username}' is not active.")
    if not user.is_staff:
        raise CommandError(f"User '{username}' is not staff: only staff users make configuration changes.")
    return user
