"""The people of the four-eyes tests: an editor who proposes, two approvers."""

from __future__ import annotations

import pytest

from tests.support import make_user


@pytest.fixture
def editor(db):
    return make_user("editor", "config_editors")


@pytest.fixture
def approver(db):
    return make_user("approver", "risk_approvers")


@pytest.fixture
def approver2(db):
    return make_user("approver2", "risk_approvers")
