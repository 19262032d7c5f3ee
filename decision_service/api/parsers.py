"""JSON bodies with a hard size limit, so an oversized request is refused before it is read whole."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from rest_framework import exceptions, parsers


class PayloadTooLarge(exceptions.APIException):
    status_code = 413
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


class LimitedJSONParser(parsers.JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = settings.ARBITER_MAX_REQUEST_BYTES
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge(f"The request body is larger than {limit // 1024} KiB.")
        body = stream.read(limit + 1) if stream is not None else b""
        if len(body) > limit:
            raise PayloadTooLarge(f"The request body is larger than {limit // 1024} KiB.")
        if not body:
            raise exceptions.ParseError("The request body is empty; send a JSON object.")
        try:
            return json.loads(body.decode("utf-8"), parse_constant=_refuse_constant)
        except (UnicodeDecodeError, ValueError) as exc:
            raise exceptions.ParseError(f"The request body is not valid JSON: {exc}") from exc


def _refuse_constant(name: str) -> Any:
    # NaN and Infinity are not JSON; Python's parser would accept them.
    raise ValueError(f"{name} is not allowed in JSON")
