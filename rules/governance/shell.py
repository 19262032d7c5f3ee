"""Who a management command acts as. The shell has no login: whoever runs a command names the user, and
is trusted to (docs/threat-model.md). What can be checked is that the name is of someone who could propose
the same change over the staff API — an existing, active staff user holding ``rules.add_changerequest``
(the ``config_editors`` group) — and the history records that it came from the shell
(``change_request_via``)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.management.base import CommandError


def shell_user(username: str | None) -> AbstractBaseUser:
    """The active staff user named by ``--user`` who may propose changes; a one-line ``CommandError``
    otherwise."""
    if not username:
        raise CommandError("Name the staff user the change is made as: --user USERNAME.")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"There is no user '{username}'.")
    if not user.is_active:
        raise CommandError(f"User '{username}' is not active.")
    if not user.is_staff:
        raise CommandError(f"User '{username}' is not staff: only staff users make configuration changes.")
    if not user.has_perm("rules.add_changerequest"):
        raise CommandError(
            f"User '{username}' may not propose configuration changes (rules.add_changerequest, config_editors)."
        )
    return user
