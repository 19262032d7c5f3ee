from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from rules.config.selectors import config_document
from rules.config.tools import mcp_tool_document, tools_import_mcp
from rules.errors import ApprovalRequired, DuplicateChangeRequest
from rules.governance.change_requests import change_request_via
from rules.governance.shell import shell_user


class Command(BaseCommand):
    help = (
        "Tool contracts and MCP: 'import FILE' reads an MCP server's tools/list result (JSON) into contracts "
        "(annotations give the risk and retry defaults; a change to a write or destructive tool's schemas or "
        "risk becomes a change request); 'export' writes the contracts as a tools/list result."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["import", "export"])
        parser.add_argument("file", nargs="?", help="import: the tools/list result (JSON).")
        parser.add_argument("--user", help="import: the active staff user the change is made as.")
        parser.add_argument("--reason", help="import: the change reason (default: 'mcp_tools import FILE').")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "export":
            tools = [mcp_tool_document(t) for t in config_document().get("tools", [])]
            self.stdout.write(json.dumps({"tools": tools}, ensure_ascii=False, indent=2))
            return
        path = options.get("file")
        if not path:
            raise CommandError("import needs the tools/list result's file.")
        result = _read(path)
        reason = options.get("reason") or f"mcp_tools import {path}"
        try:
            with change_request_via("mcp_tools import (shell)"):
                saved = tools_import_mcp(result=result, actor=shell_user(options.get("user")), reason=reason)
        except ValidationError as exc:
            raise CommandError(f"{path}: {'; '.join(exc.messages)}; nothing was written.") from exc
        except ApprovalRequired as held:
            # Last line, for scripts: the change waits for a second person and nothing was applied.
            self.stdout.write(f"change request {held.change_request.pk} pending approval")
            return
        except DuplicateChangeRequest as exc:
            raise CommandError(f"change request {exc.change_request.pk} already proposes this change.") from exc
        self.stdout.write(f"Imported {len(saved)} tool contract(s): {', '.join(t.name for t in saved)}.")


def _read(path: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CommandError(f"Cannot read {path}: {exc}") from exc
    # A JSON-RPC response ({"result": {"tools": …}}) or the result itself.
    result = data.get("result", data) if isinstance(data, dict) else None
    if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
        raise CommandError(f'{path} is not a tools/list result (expected {{"tools": [...]}}).')
    return result
