"""The staff token class's quick answer for a header that holds no staff token: the answer it gave before
reading the header (``rules.governance.auth``). A header sent as bytes takes the long way, so each header
is tried both ways."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import RequestFactory
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from decision_service.tokens import STAFF_TOKEN_PREFIX
from rules.governance.auth import StaffTokenAuthentication
from rules.governance.tokens import staff_token_create

pytestmark = pytest.mark.django_db

_PIECES = st.sampled_from(
    ["Bearer", "bearer", "BEARER", "Basic", " ", "  ", "\t", STAFF_TOKEN_PREFIX, "arbu", "x", "é"]
)
_HEADERS = st.lists(st.one_of(_PIECES, st.text(alphabet=st.characters(max_codepoint=255), max_size=6)), max_size=5).map(
    "".join
)


def _answer(header: str | bytes) -> object:
    request = Request(RequestFactory().get("/", HTTP_AUTHORIZATION=header))
    try:
        found = StaffTokenAuthentication().authenticate(request)
    except AuthenticationFailed as refused:
        return ("refused", str(refused.detail))
    return None if found is None else (found[0].pk, found[1].token_prefix)


@settings(max_examples=400, deadline=None)
@given(header=_HEADERS)
def test_a_header_is_answered_as_the_long_way_answers_it(header):
    assert _answer(header) == _answer(header.encode("latin-1"))


def test_a_staff_token_is_still_read_and_a_wrong_one_refused():
    user = get_user_model().objects.create_user(username="quick_auth", password="pw-quick-1", is_staff=True)
    token = staff_token_create(user=user)
    for header in (f"Bearer {token}", f"bearer {token}", f"Bearer {token}x", f"Bearer {STAFF_TOKEN_PREFIX}nope"):
        assert _answer(header) == _answer(header.encode("latin-1"))
    assert _answer(f"Bearer {token}")[0] == user.pk
    assert _answer(f"Bearer {STAFF_TOKEN_PREFIX}nope")[0] == "refused"
    assert _answer("Bearer agent-token-without-the-prefix") is None
