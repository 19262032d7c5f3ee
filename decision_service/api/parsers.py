"""JSON bodies with a hard size limit and a bounded shape.

A body whose declared length is over the limit is refused before anything reads it, by
``decision_service.api.middleware``; the parser checks the length again as it reads, for a body that
comes some other way (Django's test client, a server that dechunks).
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.conf import settings
from rest_framework import exceptions, parsers


class PayloadTooLarge(exceptions.APIException):
    status_code = 413
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


def body_too_large_detail(limit: int) -> str:
    return f"The request body is larger than {limit // 1024} KiB."


class LimitedJSONParser(parsers.JSONParser):
    limit_setting = "ARBITER_MAX_REQUEST_BYTES"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = int(getattr(settings, self.limit_setting))
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge(body_too_large_detail(limit))
        body = stream.read(limit + 1) if stream is not None else b""
        if len(body) > limit:
            raise PayloadTooLarge(body_too_large_detail(limit))
        if not body:
            raise exceptions.ParseError("The request body is empty; send a JSON object.")
        try:
            data = json.loads(body.decode("utf-8"), parse_constant=_refuse_constant)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # RecursionError: nesting too deep
            raise exceptions.ParseError(f"The request body is not valid JSON: {exc}") from exc
        problem = _shape_problem(data)
        if problem:
            raise exceptions.ParseError(problem)
        out_of_range = _non_finite_path(data)
        if out_of_range is not None:
            # Well-formed JSON whose number no double holds (1e400 parses as infinity): unprocessable, and
            # refused here, once for every field, before any of it reaches a JSON column (PostgreSQL's
            # jsonb refuses infinity, and a server error is no answer to a client's input).
            raise exceptions.ValidationError(_nested(out_of_range, NON_FINITE))
        return data


class StaffJSONParser(LimitedJSONParser):
    """Staff operations carry whole configuration documents: a larger limit than an agent's turn."""

    limit_setting = "ARBITER_MAX_STAFF_REQUEST_BYTES"


MAX_DEPTH = 32


def _shape_problem(data: Any) -> str | None:
    """Nothing we accept nests deeply, and text must be storable: refuse both before any other code
    walks the body (recursion in serialisers, UTF-8 encoding in the database driver)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"The request body nests deeper than {MAX_DEPTH} levels."
        if isinstance(value, str):
            if not _encodable(value):
                return "The request body holds text with an unpaired surrogate (U+D800 to U+DFFF)."
        elif isinstance(value, dict):
            for key, item in value.items():
                if not _encodable(key):
                    return "The request body holds a key with an unpaired surrogate (U+D800 to U+DFFF)."
                stack.append((item, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)
    return None


NON_FINITE = "A number out of range: JSON numbers here must be finite (at most about 1.8e308 in size)."


def _non_finite_path(data: Any) -> list[str] | None:
    """The path to the first number that parsed as infinite, or ``None``. NaN and Infinity written as
    such never get here: they are not JSON (``_refuse_constant``)."""
    stack: list[tuple[Any, list[str]]] = [(data, [])]
    while stack:
        value, path = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return path
        if isinstance(value, dict):
            stack.extend((item, [*path, str(key)]) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((item, [*path, str(i)]) for i, item in enumerate(value))
    return None


def _nested(path: list[str], message: str) -> Any:
    """Field problems as DRF nests them: ``{"context": {"a": ["…"]}}``; the whole body's under
    ``non_field_errors``."""
    problems: Any = [message]
    for part in reversed(path):
        problems = {part: problems}
    return problems if path else {"non_field_errors": problems}


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _refuse_constant(name: str) -> Any:
    # NaN and Infinity are not JSON; Python's parser would accept them.
    raise ValueError(f"{name} is not allowed in JSON")
