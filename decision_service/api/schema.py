"""Serves the hand-written OpenAPI description of the agent API (``docs/openapi.yaml``), without auth."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from rest_framework.request import Request
from rest_framework.views import APIView

SPEC_PATH = Path(settings.BASE_DIR) / "docs" / "openapi.yaml"


@lru_cache(maxsize=1)
def _spec_bytes() -> bytes:
    return SPEC_PATH.read_bytes()


class OpenApiDocumentApi(APIView):
    """An APIView only so that a wrong method is refused as problem+json like the rest of the API."""

    authentication_classes: list[Any] = []
    permission_classes: list[Any] = []

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # The document is YAML whatever the client accepts; never refuse it with a 406.
        return super().perform_content_negotiation(request, force=True)

    def get(self, request: Request) -> HttpResponse:
        return HttpResponse(_spec_bytes(), content_type="application/yaml; charset=utf-8")
