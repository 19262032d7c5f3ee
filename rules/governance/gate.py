"""The four-eyes gate of every configuration change: which changes wait for a second person.

``rules.config.revisions.config_change`` (the seam every writer goes through) asks the gate registered
with it; ``RulesConfig.ready()`` registers ``GATE``. The seam so knows nothing of change requests, and the
workflow (``rules.governance.change_requests``) builds on the seam, not the other way round.
"""

from __future__ import annotations

from typing import Any

from rules.config.document.diff import config_diff
from rules.config.revisions import Actor, ConfigChange, Proposal, snapshot_digest
from rules.config.selectors import revision_latest
from rules.governance.change_request_apply import change_requests_supersede
from rules.governance.change_request_data import change_risks_under_open_requests
from rules.governance.change_requests import change_request_hold
from rules.governance.risk import change_risks
from rules.models import ChangeRequest


class FourEyesGate:
    """Holds back a change that is high-risk against the latest revision (``rules.governance.risk``)."""

    def held(self, change: ConfigChange, snapshot: dict[str, Any]) -> Proposal | None:
        if change.change_request is not None:
            return None
        latest = revision_latest()
        if latest is None or latest.digest == snapshot_digest(snapshot):
            return None
        changes = config_diff(latest.snapshot, snapshot)
        risks = change_risks(latest.snapshot, snapshot, changes)
        if not risks:
            # Judged against what is live only, a list edit is low-risk while the rule that reads it still
            # decides after every high-risk rule; but an open request may be about to move that rule
            # ahead. The edit is judged as it would be once each open request applies, so that one person
            # cannot arm an approved (or pending) change afterwards with edits its reviewers never saw.
            risks = change_risks_under_open_requests(before=latest.snapshot, after=snapshot)
        if not risks:
            return None
        return Proposal(
            base_revision=latest.number, before=latest.snapshot, after=snapshot, changes=changes, risks=risks
        )

    def hold(self, *, proposal: Proposal, actor: Actor, reason: str) -> ChangeRequest:
        return change_request_hold(proposal=proposal, actor=actor, reason=reason)

    def applied(self, change: ConfigChange) -> None:
        assert change.revision is not None
        change_requests_supersede(
            snapshot=change.revision.snapshot, revision=change.revision.number, applying=change.change_request
        )


GATE = FourEyesGate()
