from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model


@pytest.fixture
def staff_user(db):
    User = get_user_model()
    return User.objects.create_user(username="ops", password="ops-password-1", is_staff=True, is_superuser=True)


@pytest.fixture
def actor(staff_user):
    return staff_user
