from django.urls import path

from agents.mcp.apis import McpGatewayApi

urlpatterns = [path("mcp", McpGatewayApi.as_view(), name="mcp-gateway")]
