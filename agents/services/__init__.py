"""Writes in the agents app: agent runtimes and machines (``runtimes``), sessions (``sessions``)."""

from agents.services.runtimes import (
    TOKEN_PREFIX,
    agent_create,
    agent_rotate_token,
    agent_save,
    agent_set_points,
    machine_delete,
    machine_save,
    token_hash,
)

__all__ = [
    "TOKEN_PREFIX",
    "agent_create",
    "agent_rotate_token",
    "agent_save",
    "agent_set_points",
    "machine_delete",
    "machine_save",
    "token_hash",
]
