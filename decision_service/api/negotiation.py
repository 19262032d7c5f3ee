"""Content negotiation: DRF's, with the answer it gives most requests found without parsing anything.

Nearly every request names no format and accepts JSON outright (no ``Accept`` header, ``*/*`` or
``application/json``: the client package sends the last). DRF parses the header into media types and
ranks them for each request, which profiled at about a tenth of a tool-call check's server time outside
the service (bench/RESULTS.md, "The check's last cuts"). For those requests the first renderer is DRF's
own answer when it renders JSON; anything else — another ``Accept``, a query string that may hold
``?format=``, a format suffix, a view whose first renderer is not JSON — is negotiated by DRF as before.
tests/api/test_negotiation.py checks that both give the same answer.
"""

from __future__ import annotations

from typing import Any

from rest_framework.negotiation import DefaultContentNegotiation

JSON = "application/json"
_ANY_JSON = frozenset({None, "*/*", JSON})


class QuickNegotiation(DefaultContentNegotiation):
    def select_renderer(self, request: Any, renderers: Any, format_suffix: Any = None) -> Any:
        meta = request._request.META
        if (
            format_suffix is None
            and not meta.get("QUERY_STRING")
            and meta.get("HTTP_ACCEPT") in _ANY_JSON
            and renderers
            and renderers[0].media_type == JSON
        ):
            return renderers[0], JSON
        return super().select_renderer(request, renderers, format_suffix)
