from __future__ import annotations

import pytest

from tests.support.breakers import breakers_forget


@pytest.fixture(autouse=True)
def _forget_demo_breakers():
    breakers_forget()
    yield
    breakers_forget()
