"""Signatures as the Standard Webhooks specification writes them (https://www.standardwebhooks.com/).

Each delivery carries three headers: ``webhook-id`` (the event's id), ``webhook-timestamp`` (seconds
since the epoch, when this attempt was signed) and ``webhook-signature``: ``v1,<base64 HMAC-SHA256>``
of ``"<id>.<timestamp>.<body>"`` under the secret, space-separated when a rotated secret still signs
alongside the new one. A secret is ``whsec_`` and the base64 of its 32 random key bytes; the key is the
decoded bytes. The client's ``arbiter_client.webhooks.verify`` checks what this signs.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"  # noqa: S105 - the prefix of every secret, not a secret


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def _key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def signature(secret: str, *, msg_id: str, timestamp: int, body: bytes) -> str:
    """One ``v1,<base64>`` signature of ``body`` sent as ``msg_id`` at ``timestamp``."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def signed_headers(secrets_: list[str], *, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three headers of a delivery, signed with each of ``secrets_`` (the current one first)."""
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(signature(s, msg_id=msg_id, timestamp=timestamp, body=body) for s in secrets_),
    }
