"""The browser tests' Chromium page (Playwright's sync API against pytest-django's live server)."""

from __future__ import annotations

import importlib
import os

import pytest
from django.db import connections

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, wait_for_server_threads

# Playwright's sync API runs an asyncio loop in this thread, and Django refuses ORM calls from a thread
# with a running loop unless told otherwise; the test's own ORM calls (setup, assertions) are plainly sync.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"


@pytest.fixture
def chromium_page():
    required = os.environ.get("ARBITER_REQUIRE_BROWSER") == "1"
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is not installed (apt-get install chromium)"
        if required:
            pytest.fail(f"ARBITER_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    try:
        sync_api = importlib.import_module("playwright.sync_api")
    except ImportError as exc:
        # importorskip alone would skip here, and a CI run that must drive the browser would pass.
        if required:
            pytest.fail(f"ARBITER_REQUIRE_BROWSER=1 but Playwright cannot be imported: {exc}")
        pytest.skip(f"Playwright cannot be imported: {exc}")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(15_000)
            yield page
        finally:
            browser.close()
            wait_for_server_threads()
            # ORM calls made while Playwright's loop runs in this thread get their own connection
            # (Django keys connections by context); close it, or PostgreSQL cannot drop the test database.
            connections.close_all()
