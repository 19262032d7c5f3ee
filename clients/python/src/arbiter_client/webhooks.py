"""Verifying Arbiter's signed webhooks (docs/webhooks.md), as the Standard Webhooks specification does.

    from arbiter_client import webhooks

    event = webhooks.verify(secret, request.headers, request.body)   # raises WebhookVerificationError

``secret`` is the ``whsec_…`` string the admin showed once. ``headers`` is any mapping of the request's
headers (looked up without regard to case); ``body`` the raw bytes, exactly as received — parse them only
after verifying. A delivery is accepted when one of its signatures (several while a rotated secret still
signs) is the HMAC-SHA256 of ``"<webhook-id>.<webhook-timestamp>.<body>"`` under the secret, and its
timestamp is within ``tolerance`` seconds of now (a replayed old delivery is refused). Keep the
``webhook-id`` of what you have handled: a retried delivery carries the same id.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

__all__ = ["WebhookVerificationError", "sign", "verify"]

SECRET_PREFIX = "whsec_"  # noqa: S105 - the prefix of every secret


class WebhookVerificationError(Exception):
    """The delivery is not Arbiter's, was altered, or is too old or too new to trust."""


def _key(secret: str) -> bytes:
    try:
        return base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("not a webhook secret: expected whsec_ and base64") from exc


def sign(secret: str, *, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``v1,<base64>`` signature Arbiter sends for ``body`` (for tests of a receiver)."""
    digest = hmac.new(_key(secret), f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def _header(headers: Mapping[str, str], name: str) -> str:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    raise WebhookVerificationError(f"missing header {name}")


def verify(
    secret: str, headers: Mapping[str, str], body: bytes | str, *, tolerance: int = 300, now: float | None = None
) -> dict[str, Any]:
    """Check a delivery's signature and age; return its payload (``type``, ``timestamp``, ``data``)."""
    raw = body.encode() if isinstance(body, str) else bytes(body)
    msg_id = _header(headers, "webhook-id")
    stamp = _header(headers, "webhook-timestamp")
    try:
        timestamp = int(stamp)
    except ValueError as exc:
        raise WebhookVerificationError("webhook-timestamp is not a number") from exc
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise WebhookVerificationError("webhook-timestamp is outside the tolerance")
    expected = sign(secret, msg_id=msg_id, timestamp=timestamp, body=raw)
    offered = _header(headers, "webhook-signature").split()
    if not any(hmac.compare_digest(expected, candidate) for candidate in offered):
        raise WebhookVerificationError("no signature matches")
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        raise WebhookVerificationError("the body is not JSON") from exc
    if not isinstance(payload, dict):
        raise WebhookVerificationError("the body is not a JSON object")
    return payload
