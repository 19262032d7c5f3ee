"""The one canonical-JSON digest keeps both spellings stored digests were made with."""

from __future__ import annotations

import hashlib
import json

from decision_service.digests import canonical_digest, canonical_json


def test_both_spellings_sort_keys_without_whitespace():
    value = {"b": "合规", "a": [1, 2.5, None]}
    assert canonical_json(value, text="utf-8") == '{"a":[1,2.5,null],"b":"合规"}'
    assert canonical_json(value, text="ascii") == '{"a":[1,2.5,null],"b":"\\u5408\\u89c4"}'


def test_the_digest_is_the_sha256_of_that_json():
    value = {"k": "v", "n": [3]}
    for text in ("utf-8", "ascii"):
        expected = hashlib.sha256(canonical_json(value, text=text).encode()).hexdigest()
        assert canonical_digest(value, text=text) == expected
    assert (
        canonical_digest(value, text="utf-8")
        == hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    )
