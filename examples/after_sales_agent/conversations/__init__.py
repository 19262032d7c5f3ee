"""The reference conversations (YAML): what the customer says, what the scripted model answers each
turn, and what must come out (who decided, the decision, the state after, how many model calls)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent


def conversation_paths() -> list[Path]:
    return sorted(HERE.glob("*.yaml"))


def conversation_load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data
