"""Bearer tokens: 256 random bits behind a public prefix that says what kind of token it is.

Only a hash is stored. A fast hash is enough: with 256 random bits there is nothing to brute-force.
"""

from __future__ import annotations

import hashlib
import secrets

AGENT_TOKEN_PREFIX = "arb_"  # noqa: S105 - a public marker, not a secret
STAFF_TOKEN_PREFIX = "arbu_"  # noqa: S105 - a public marker, not a secret


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)
