"""decision_service.api.negotiation: the quick answer for a request that accepts JSON outright is DRF's own
answer, and every other request is negotiated by DRF."""

from __future__ import annotations

import pytest
from django.http import Http404
from django.test import RequestFactory
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request

from decision_service.api.negotiation import QuickNegotiation


class YamlRenderer(BaseRenderer):
    media_type = "application/yaml"
    format = "yaml"


class CsvRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"


ACCEPTS = [
    None,
    "*/*",
    "application/json",
    "application/json; indent=4",
    "application/*",
    "text/csv",
    "application/yaml, */*;q=0.1",
    "text/html",
    "",
    "application/problem+json",
]
QUERIES = ["", "format=json", "format=csv", "format=yaml", "page=2"]
RENDERER_SETS = [
    [JSONRenderer],
    [JSONRenderer, CsvRenderer],
    [YamlRenderer, JSONRenderer],
    [CsvRenderer],
]


def _answer(negotiation, accept, query, renderer_classes, suffix):
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    request = Request(RequestFactory().get(f"/api/v1/points{'?' + query if query else ''}", **headers))
    renderers = [r() for r in renderer_classes]
    try:
        renderer, media_type = negotiation.select_renderer(request, renderers, suffix)
    except (NotAcceptable, Http404) as refused:
        return type(refused).__name__
    return type(renderer).__name__, media_type


@pytest.mark.parametrize("renderer_classes", RENDERER_SETS, ids=lambda rs: "+".join(r.__name__ for r in rs))
@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("accept", ACCEPTS)
@pytest.mark.parametrize("suffix", [None, "csv"])
def test_the_quick_negotiation_answers_as_drfs(accept, query, renderer_classes, suffix):
    quick = _answer(QuickNegotiation(), accept, query, renderer_classes, suffix)
    assert quick == _answer(DefaultContentNegotiation(), accept, query, renderer_classes, suffix)


def test_it_is_the_api_s_negotiation_and_answers_json_without_drf(monkeypatch):
    from rest_framework.settings import api_settings

    assert api_settings.DEFAULT_CONTENT_NEGOTIATION_CLASS is QuickNegotiation
    # The quick answer does not reach DRF's negotiation at all.
    monkeypatch.setattr(DefaultContentNegotiation, "select_renderer", lambda *a, **k: pytest.fail("negotiated"))
    assert _answer(QuickNegotiation(), "application/json", "", [JSONRenderer], None) == (
        "JSONRenderer",
        "application/json",
    )
