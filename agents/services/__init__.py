"""Writes in the agents app: agent runtimes (``runtimes``), sessions (``sessions``), decisions (``decisions``)."""

from agents.services.runtimes import (
    TOKEN_PREFIX,
    agent_create,
    agent_rotate_token,
    agent_save,
    agent_set_points,
    token_hash,
)

__all__ = [
    "TOKEN_PREFIX",
    "agent_create",
    "agent_rotate_token",
    "agent_save",
    "agent_set_points",
    "token_hash",
]
