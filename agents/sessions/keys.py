"""The Idempotency-Key of a session write (a move, an interrupt, a resume, a reported anomaly).

One key space per agent for every write of the agent API, decisions included
(``rules.decisions.idempotency``): the same key with the same request replays the first answer; with
another request — another body, another session, another operation, or a decision — it is
``409 idempotency_conflict``. Two agents never share keys. Only a write that was made stores its key: a
refused request retried with its key is judged again.

The key is looked up under the session's lock, so two retries of one request on one session serialise
and the second replays. Two requests with one key on two sessions (or a decision) race on the key
table's unique index: the loser's transaction is rolled back (``KeyTaken``) and it is made once more,
when the lookup finds the winner's key and refuses or replays it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.utils import timezone

from decision_service.errors import IdempotencyConflict
from rules.decisions.idempotency import KeyTaken, write_key_get, write_key_store

T = TypeVar("T")


@dataclass(frozen=True)
class WriteKey:
    """One session write's key ("" when the request had none), with what identifies its request."""

    agent_id: int
    key: str
    operation: str
    digest: str
    session_id: str

    def earlier(self) -> Any | None:
        """The target stored by the same write made earlier, or ``None``; a conflicting use is refused."""
        if not self.key:
            return None
        target = write_key_get(agent_id=self.agent_id, key=self.key, operation=self.operation, digest=self.digest)
        if target is not None and target.get("session_id") != self.session_id:
            raise IdempotencyConflict(f"Idempotency-Key '{self.key}' was already used for another session.")
        return target

    def store(self, **target: Any) -> None:
        """Keep the key with what a retry is answered from (in the caller's transaction)."""
        if self.key:
            write_key_store(
                agent_id=self.agent_id,
                key=self.key,
                operation=self.operation,
                digest=self.digest,
                target={"session_id": self.session_id, **target},
                now=timezone.now(),
            )


def keyed(attempt: Callable[[], T]) -> T:
    """``attempt()``, once more when a concurrent request took its key first (see the module docstring)."""
    try:
        return attempt()
    except KeyTaken:
        return attempt()
