from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rules.config.yaml_import import config_import
from rules.errors import ConfigError, DuplicateChangeRequest
from rules.governance.change_requests import change_request_via
from rules.governance.shell import shell_user


class Command(BaseCommand):
    help = (
        "Make the live configuration equal to a YAML file: print the difference, then apply it as one "
        "revision (a high-risk change becomes a change request that waits for approval instead). The file is "
        "the whole configuration — records it does not mention are deleted."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="The YAML configuration file.")
        parser.add_argument("--dry-run", action="store_true", help="Show the difference and check it; write nothing.")
        parser.add_argument(
            "--user",
            help="Required (except with --dry-run): the active staff user the change is made as, recorded as its "
            "author in history and on any change request it files. The shell is trusted to name them; the "
            "request's history says the change came from import_config (shell).",
        )
        parser.add_argument("--reason", help="Change reason recorded in history (default: 'import_config FILE').")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["file"]
        text = _read(path)
        # A dry run writes nothing, so it needs no author; anything else is made as a named staff user.
        actor = None if options["dry_run"] and not options.get("user") else shell_user(options["user"])
        reason = options.get("reason") or f"import_config {path}"
        try:
            with change_request_via("import_config (shell)"):
                result = config_import(text=text, source=path, actor=actor, reason=reason, dry_run=options["dry_run"])
        except ConfigError as exc:
            for problem in exc.problems:
                self.stderr.write(problem)
            raise CommandError(f"{len(exc.problems)} problem(s) in {path}; nothing was written.") from exc
        except DuplicateChangeRequest as exc:
            raise CommandError(
                f"change request {exc.change_request.pk} ({exc.change_request.state}) already proposes exactly this "
                "change; nothing was filed."
            ) from exc
        if not result.changed:
            self.stdout.write(f"No changes: the live configuration already matches {path}.")
            return
        for line in result.diff:
            self.stdout.write(line)
        for risk in result.risks:
            self.stdout.write(f"needs approval: {risk.record}: {risk.why}")
        if result.change_request is not None:
            # Last line, for scripts: the change waits for a second person and nothing was applied.
            self.stdout.write(f"change request {result.change_request.pk} pending approval")
            return
        if options["dry_run"]:
            verdict = "a second person's approval" if result.risks else "no approval"
            self.stdout.write(
                f"Dry run: {len(result.diff)} change(s) checked; applying them would need {verdict}; "
                "nothing was written."
            )
        elif result.revision is not None:
            self.stdout.write(f"Applied {len(result.diff)} change(s) as revision {result.revision}.")
        else:
            self.stdout.write(f"Applied {len(result.diff)} change(s).")


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"Cannot read {path}: {exc}") from exc
