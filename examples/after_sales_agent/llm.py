"""The agent's model, pluggable: a scripted mock (the conversation says what the model answers each
turn) or any OpenAI-compatible chat endpoint (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
``ARBITER_AGENT_MODEL``)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any, Protocol

import httpx


class Model(Protocol):
    """``name`` and ``provider`` are what the agent reports as ``gen_ai.request.model`` (and decide's
    ``llm.model``) and ``gen_ai.provider.name``; ``last_usage`` the (input, output) tokens of the last
    answer, when known."""

    name: str
    provider: str
    last_usage: tuple[int, int] | None

    def complete(self, system: str, user: str) -> str: ...


class ScriptedModel:
    """Answers with the next scripted text; records each prompt it was asked (and fails loudly when
    the agent asks more often than the script says, so a test sees an unexpected model call)."""

    provider = "scripted"
    last_usage: tuple[int, int] | None = None  # a script counts no tokens

    def __init__(self, answers: Iterable[Any] = (), *, name: str = "scripted-mock"):
        self.name = name
        self.answers = [a if isinstance(a, str) else json.dumps(a, ensure_ascii=False) for a in answers]
        self.prompts: list[tuple[str, str]] = []

    def push(self, answer: Any) -> None:
        self.answers.append(answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False))

    def complete(self, system: str, user: str) -> str:
        self.prompts.append((system, user))
        if not self.answers:
            raise AssertionError(f"the model was asked about {user!r} but the script has no answer left")
        return self.answers.pop(0)


class OpenAICompatibleModel:
    """``POST {base_url}/chat/completions`` on httpx; the first choice's message is the answer."""

    provider = "openai"

    def __init__(self, base_url: str, api_key: str, model: str, *, timeout: float = 60.0):
        self.model = self.name = model
        self.last_usage: tuple[int, int] | None = None
        self.http = httpx.Client(
            base_url=base_url.rstrip("/"), headers={"Authorization": f"Bearer {api_key}"}, timeout=timeout
        )

    @classmethod
    def from_environment(cls) -> OpenAICompatibleModel:
        return cls(
            os.environ["OPENAI_BASE_URL"],
            os.environ.get("OPENAI_API_KEY", ""),
            os.environ.get("ARBITER_AGENT_MODEL", "gpt-4o-mini"),
        )

    def complete(self, system: str, user: str) -> str:
        response = self.http.post(
            "/chat/completions",
            json={
                "model": self.model,
                "temperature": 0,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            },
        )
        response.raise_for_status()
        body = response.json()
        usage = body.get("usage") or {}
        known = isinstance(usage.get("prompt_tokens"), int) and isinstance(usage.get("completion_tokens"), int)
        self.last_usage = (usage["prompt_tokens"], usage["completion_tokens"]) if known else None
        return str(body["choices"][0]["message"]["content"])

    def close(self) -> None:
        self.http.close()
