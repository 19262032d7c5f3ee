"""Mock after-sales tools for the reference agent: what an order system would answer, with the failures
seed 000 is about made to happen on purpose. Their contracts are in demo/after_sales.yaml (``tools:``).

- ``verify_phone`` (read_only): a mainland mobile number is verified when it ends in an even digit.
- ``query_order`` (read_only): answers ``RATE_LIMIT_EXCEEDED`` a given fraction of the time (drawn from
  its own seeded random), each code in ``script`` first (a conversation's exact sequence), every call
  while ``down`` or within the ``outage`` window (``UPSTREAM_UNAVAILABLE``, a code the contract does not
  declare — what a failing upstream really answers), and ``ORDER_NOT_FOUND`` for an order it lacks.
- ``update_order`` (write): changes an order's receiver phone or address; ``ORDER_LOCKED`` once shipped.
Each counts the calls that reached it: the load an upstream sees.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from arbiter_client import ToolError

RATE_LIMITED = "RATE_LIMIT_EXCEEDED"
NOT_FOUND = "ORDER_NOT_FOUND"
LOCKED = "ORDER_LOCKED"
UNAVAILABLE = "UPSTREAM_UNAVAILABLE"


def _orders() -> dict[str, dict[str, Any]]:
    return {
        "SO20240001": {"order_id": "SO20240001", "status": "shipped", "amount": 299.0, "receiver_phone": "13800138000"},
        "SO20240002": {"order_id": "SO20240002", "status": "paid", "amount": 59.9, "receiver_phone": "13900139000"},
    }


@dataclass
class OrderSystem:
    """The three tools over one in-memory order book. Thread-safe: the benchmark calls it from threads."""

    rate_limit_fraction: float = 0.0
    down: bool = False
    outage: tuple[float, float] | None = None  # down between these ``time.perf_counter()`` readings
    seed: int = 0
    script: list[str] = field(default_factory=list)
    orders: dict[str, dict[str, Any]] = field(default_factory=_orders)
    calls: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)  # noqa: S311 (a reproducible draw, not a secret)
        self._lock = threading.Lock()

    def _fail(self, tool: str, code: str, message: str = "") -> ToolError:
        self.failures[f"{tool}:{code}"] += 1
        return ToolError(code, message)

    def verify_phone(self, input: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.calls["verify_phone"] += 1
        return {"verified": int(str(input["phone"])[-1]) % 2 == 0}

    def query_order(self, input: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.calls["query_order"] += 1
            scripted = self.script.pop(0) if self.script else None
            limited = self._random.random() < self.rate_limit_fraction
            now = time.perf_counter()
            if self.down or (self.outage is not None and self.outage[0] <= now < self.outage[1]):
                raise self._fail("query_order", UNAVAILABLE, "the order service is down")
            if scripted is not None:
                raise self._fail("query_order", scripted, "scripted")
            if limited:
                raise self._fail("query_order", RATE_LIMITED, "too many requests")
            order = self.orders.get(str(input["order_id"]))
            if order is None:
                raise self._fail("query_order", NOT_FOUND, f"no order {input['order_id']}")
            return dict(order)

    def update_order(self, input: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.calls["update_order"] += 1
            order = self.orders.get(str(input["order_id"]))
            if order is None:
                raise self._fail("update_order", NOT_FOUND, f"no order {input['order_id']}")
            if order["status"] == "shipped":
                raise self._fail("update_order", LOCKED, "the order has shipped")
            order.update({k: v for k, v in input.items() if k in ("receiver_phone", "address")})
            return {"order_id": order["order_id"], "updated": sorted(k for k in input if k != "order_id")}

    def functions(self) -> dict[str, Any]:
        return {"verify_phone": self.verify_phone, "query_order": self.query_order, "update_order": self.update_order}
