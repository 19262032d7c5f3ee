from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from rules.config.yaml_import import config_import
from tests.support import DEMO, groups_ensure

DEMO_TEXT = DEMO.read_text(encoding="utf-8")


def make_user(username: str, *groups: str, **extra):
    groups_ensure()
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
