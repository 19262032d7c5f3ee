"""Django admin of the rules app: Django's autodiscovery imports this module, which imports every room's
admin modules so that each registers its models. The shared configuration-admin kit is
``rules.config.admin.base``."""

from rules.config.admin import keywords, machines, mcp_servers, points, revisions, thresholds, tools
from rules.decisions import admin as decisions
from rules.governance.admin import change_requests

__all__ = [
    "change_requests",
    "decisions",
    "keywords",
    "machines",
    "mcp_servers",
    "points",
    "revisions",
    "thresholds",
    "tools",
]
