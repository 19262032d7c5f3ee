"""Which changes to a tool contract are high-risk (``rules.governance.risk`` asks).

A tool that writes or destroys acts on the world: its contract is what stops a model's malformed or
repeated call. So for a tool that is ``write`` or ``destructive`` **on either side** (as it was or as it
would be — lowering a destructive tool to read-only is itself high-risk), changing what it accepts or
answers (``input_schema``, ``output_schema``), how its failures are handled (``error_codes``,
``on_exhausted``), its ``risk``, or the states where a person approves its calls (``needs_approval_in``)
is high-risk, and so is deleting it. Everything else — a new tool, a read-only tool's contract, a
description, the timeout, concurrency limit or breaker (its ``ignore_codes`` too: dropping the whole
breaker applies at once, so ignoring some of its codes cannot be riskier) — applies at once. Pure
functions over document data.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from django.utils.translation import gettext, gettext_noop

from rules.config.document.diff import RecordChange

ACTING_RISKS = frozenset({"write", "destructive"})
TOOL_FIELDS = frozenset({"input_schema", "output_schema", "error_codes", "on_exhausted", "risk", "needs_approval_in"})


def _acts(record: Mapping[str, Any] | None) -> bool:
    return record is not None and record.get("risk") in ACTING_RISKS


def tool_risks(change: RecordChange) -> Iterator[tuple[str, dict[str, Any]]]:
    """A tool change's reasons, as (message id, params)."""
    if not (_acts(change.old) or _acts(change.new)):
        return
    if change.action == "remove":
        yield gettext_noop("deletes the contract of a write or destructive tool"), {}
    elif change.action == "change":
        watched = {f.field for f in change.fields} & TOOL_FIELDS
        if watched:
            yield (
                gettext_noop("changes %(fields)s of a write or destructive tool"),
                {"fields": ", ".join(sorted(watched))},
            )


def tool_approval_note(tool: Mapping[str, Any] | None) -> str | None:
    """For the admin: which changes to this contract need approval."""
    if not _acts(tool):
        return gettext("Making this tool write or destructive needs approval.")
    return gettext(
        "Write or destructive tool: changing its schemas, error codes, on exhausted, risk or approval states, "
        "or deleting it, needs approval."
    )
