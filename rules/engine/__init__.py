"""Arbiter's rule engine: a pure function of (configuration snapshot, request) → decision.

Nothing here imports Django. ``compile_config`` builds compiled points once per revision;
``evaluate`` decides one request against a compiled point.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rules.engine.candidate import CandidateParseError, parse_candidate
from rules.engine.compiler import CompiledConfig, CompiledPoint, CompileError, MatcherFactory, compile_snapshot
from rules.engine.evaluate import evaluate, keyword_prepass
from rules.engine.interpreter import interpreted_matcher
from rules.engine.model import Candidate, Decision, MatchedRule
from rules.engine.native import native_matcher

BACKENDS: dict[str, MatcherFactory] = {"native": native_matcher, "interpreted": interpreted_matcher}


def compile_config(snapshot: Mapping[str, Any], *, revision: int, backend: str = "native") -> CompiledConfig:
    if backend == "durable":
        from rules.engine.durable import durable_matcher  # optional dependency, loaded only when chosen

        factory: MatcherFactory = durable_matcher
    elif backend in BACKENDS:
        factory = BACKENDS[backend]
    else:
        raise CompileError(f"unknown engine backend {backend!r} (use native or durable)")
    return compile_snapshot(snapshot, revision=revision, matcher_factory=factory, backend=backend)


__all__ = [
    "Candidate",
    "CandidateParseError",
    "CompileError",
    "CompiledConfig",
    "CompiledPoint",
    "Decision",
    "MatchedRule",
    "compile_config",
    "evaluate",
    "keyword_prepass",
    "parse_candidate",
]
