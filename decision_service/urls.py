from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path, re_path
from django.utils.translation import gettext_lazy as _

from decision_service.api.errors import unknown_api_endpoint
from decision_service.api.schema import OpenApiDocumentApi
from decision_service.health import readyz
from decision_service.metrics import metrics_view


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


admin.site.site_header = "Arbiter"
admin.site.site_title = "Arbiter"
admin.site.index_title = _("Decision rules, thresholds and agents")
admin.site.index_template = "admin/arbiter/index.html"
# Arbiter has no public site: without this the header's "View site" leads to a 404.
admin.site.site_url = None

urlpatterns = [
    # The agent API first (its runtime's operations are most of the traffic, and Django tries the routes
    # in order), then the staff API: no route of one matches a path of the other, nor any route below.
    path("api/v1/", include("agents.urls")),
    path("api/v1/", include("rules.urls")),
    path("api/v1/openapi.yaml", OpenApiDocumentApi.as_view(), name="openapi-document"),
    path("admin/", admin.site.urls),
    # set_language: the admin header's language switch posts here.
    path("i18n/", include("django.conf.urls.i18n")),
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    # The MCP gateway (agents/mcp, docs/mcp.md): agent tokens, like the agent API.
    path("", include("agents.mcp.urls")),
    # Last: any other URL under /api/ is a problem+json 404 in every setting (with DEBUG on, Django
    # would show its technical page instead of calling handler404), and never a slash redirect.
    re_path(r"^api/", unknown_api_endpoint, name="api-unknown"),
]

handler404 = "decision_service.api.errors.api_not_found"
handler500 = "decision_service.api.errors.api_server_error"
