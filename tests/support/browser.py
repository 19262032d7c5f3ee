"""What the browser tests share: where Chromium is and how it is launched, the live server's threads,
and staff users who log in through the admin's form."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from tests.support import groups_ensure

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def wait_for_server_threads(timeout: float = 10.0) -> None:
    """Let the live server's request threads see the browser's sockets close.

    Each keeps its database connection until its keep-alive socket closes; one still open when the
    test database is dropped makes PostgreSQL refuse the drop ("being accessed by other users").
    """
    deadline = time.monotonic() + timeout
    for thread in threading.enumerate():
        if "process_request_thread" in thread.name:
            thread.join(max(0.0, deadline - time.monotonic()))


def browser_user(username, group):
    """A staff user in ``group`` whose password ``log_in`` knows."""
    groups_ensure()
    user = get_user_model().objects.create_user(username=username, password=f"{username}-pw-1", is_staff=True)
    user.groups.add(Group.objects.get(name=group))
    return user


def log_in(page, url, username):
    """Log ``username`` (made by ``browser_user``) into the admin in ``page``."""
    page.context.clear_cookies()
    page.goto(f"{url}/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", f"{username}-pw-1")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
