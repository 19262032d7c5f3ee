"""``arbiter_client.webhooks.verify`` against what the server signs (``agents.webhooks.signing``): any body,
id and time the server signs is accepted with its secret, and refused when anything in it changes."""

from __future__ import annotations

import json

import pytest
from arbiter_client import webhooks
from hypothesis import given
from hypothesis import strategies as st

from agents.webhooks.signing import new_secret, signed_headers

NOW = 1_800_000_000


@given(
    text=st.text(max_size=500),
    msg_id=st.from_regex(r"evt_[0-9a-f]{32}", fullmatch=True),
    skew=st.integers(min_value=-300, max_value=300),
)
def test_what_the_server_signs_verifies_and_nothing_altered_does(text, msg_id, skew):
    body = json.dumps({"type": "session.handed_off", "data": {"text": text}}, ensure_ascii=False).encode()
    secret, other = new_secret(), new_secret()
    headers = signed_headers([secret], msg_id=msg_id, timestamp=NOW + skew, body=body)
    assert webhooks.verify(secret, headers, body, now=NOW)["type"] == "session.handed_off"
    # Header names are matched whatever their case, as HTTP servers hand them over.
    assert webhooks.verify(secret, {k.title(): v for k, v in headers.items()}, body, now=NOW)
    refused = [
        (other, headers, body),
        (secret, headers, body + b" "),
        (secret, {**headers, "webhook-id": msg_id + "0"}, body),
        (secret, {**headers, "webhook-timestamp": str(NOW + skew + 1)}, body),
    ]
    for args in refused:
        with pytest.raises(webhooks.WebhookVerificationError):
            webhooks.verify(*args, now=NOW)


def test_a_rotation_signs_twice_and_either_secret_verifies():
    old, new = new_secret(), new_secret()
    body = b'{"type":"breaker.opened","data":{}}'
    headers = signed_headers([new, old], msg_id="evt_1", timestamp=NOW, body=body)
    assert len(headers["webhook-signature"].split()) == 2
    for secret in (old, new):
        assert webhooks.verify(secret, headers, body, now=NOW)["type"] == "breaker.opened"


def test_old_future_and_unsigned_deliveries_are_refused():
    secret = new_secret()
    body = b'{"type":"x","data":{}}'
    headers = signed_headers([secret], msg_id="evt_1", timestamp=NOW, body=body)
    for now in (NOW + 301, NOW - 301):
        with pytest.raises(webhooks.WebhookVerificationError, match="tolerance"):
            webhooks.verify(secret, headers, body, now=now)
    assert webhooks.verify(secret, headers, body, now=NOW + 1000, tolerance=1000)
    for missing in ("webhook-id", "webhook-timestamp", "webhook-signature"):
        partial = {k: v for k, v in headers.items() if k != missing}
        with pytest.raises(webhooks.WebhookVerificationError, match=missing):
            webhooks.verify(secret, partial, body, now=NOW)
    with pytest.raises(ValueError, match="not a webhook secret"):
        webhooks.verify("whsec_***", headers, body, now=NOW)
