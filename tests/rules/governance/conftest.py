from __future__ import annotations

import importlib

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from rules.configio.apply import config_import
from tests.support import DEMO

DEMO_TEXT = DEMO.read_text(encoding="utf-8")


def ensure_groups() -> None:
    """The governance groups, as their migration creates them: a transactional test's flush empties the
    tables after the migrations ran, so a later such test makes them again the same way."""
    if Group.objects.filter(name__in=["config_editors", "risk_approvers"]).count() < 2:
        from django.apps import apps

        migration = importlib.import_module("rules.migrations.0009_governance_groups")
        migration.create_groups(apps, None)


def make_user(username: str, *groups: str, **extra):
    ensure_groups()
    user = get_user_model().objects.create_user(
        username=username, password="pw-" + username + "-123", email=f"{username}@example.com", is_staff=True, **extra
    )
    for name in groups:
        user.groups.add(Group.objects.get(name=name))
    return user


@pytest.fixture
def editor(db):
    return make_user("editor", "config_editors")


@pytest.fixture
def approver(db):
    return make_user("approver", "risk_approvers")


@pytest.fixture
def approver2(db):
    return make_user("approver2", "risk_approvers")


@pytest.fixture
def demo(db, editor):
    """The after-sales demo as the live configuration (the first configuration applies directly)."""
    result = config_import(text=DEMO_TEXT, source="demo", actor=editor, reason="demo")
    assert result.revision == 1
    return result
