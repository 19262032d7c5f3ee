from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path

from decision_service.api.schema import OpenApiDocumentApi


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


admin.site.site_header = "Arbiter"
admin.site.site_title = "Arbiter"
admin.site.index_title = "Decision rules, thresholds and agents"
admin.site.index_template = "admin/arbiter/index.html"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("api/v1/openapi.yaml", OpenApiDocumentApi.as_view(), name="openapi-document"),
    path("api/v1/", include("rules.urls")),
    path("api/v1/", include("agents.urls")),
]

handler404 = "decision_service.api.errors.api_not_found"
handler500 = "decision_service.api.errors.api_server_error"
