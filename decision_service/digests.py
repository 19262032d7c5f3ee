"""The one canonical-JSON digest: the sha256 of a value's JSON with keys sorted and no whitespace.

What a digest names is stored (a revision's ``digest``, an idempotency key's request digest, the digest
a reviewer approves), so its spelling never changes. Two spellings exist, and each caller keeps the one
its stored digests were made with:
- ``text="utf-8"``: text as UTF-8 (configuration snapshots and change requests, whose texts are checked
  storable, so always encodable);
- ``text="ascii"``: non-ASCII escaped (request bodies, which may hold lone surrogates UTF-8 cannot
  encode).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal


def canonical_json(value: Any, *, text: Literal["utf-8", "ascii"]) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=text == "ascii")


def canonical_digest(value: Any, *, text: Literal["utf-8", "ascii"]) -> str:
    """The hex sha256 of ``canonical_json(value)``."""
    return hashlib.sha256(canonical_json(value, text=text).encode()).hexdigest()
