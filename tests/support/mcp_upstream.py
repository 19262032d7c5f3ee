"""The demo's upstream MCP server (examples/after_sales_agent/tools_server.py) in a process of its own, for
tests that need a real MCP server: ``with mcp_upstream() as upstream: upstream.url, upstream.control(...),
upstream.calls()``. It listens on a free port it picks itself and prints its URL when ready; the URL is read
from its output (a deadline, no fixed sleep)."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

import httpx

from decision_service.env import BASE_DIR


@dataclass
class McpUpstream:
    """A running upstream: ``url`` is its MCP endpoint (``…/mcp``), ``base`` its origin."""

    url: str
    process: subprocess.Popen[str]

    @property
    def base(self) -> str:
        return self.url.rsplit("/mcp", 1)[0]

    def control(self, **settings: Any) -> dict[str, Any]:
        """Set its faults (``rate_limit_ratio``, ``outage``, ``fail_next``, ``schema_version``,
        ``latency_ms``, ``reset`` …: tools_server's docstring); the faults now in force."""
        response = httpx.post(f"{self.base}/control", json=settings, timeout=10)
        response.raise_for_status()
        return dict(response.json())

    def calls(self) -> dict[str, Any]:
        """The calls that reached its tools: ``{"counts": {tool: n}, "calls": [{tool, arguments, outcome}]}``."""
        response = httpx.get(f"{self.base}/control/calls", timeout=10)
        response.raise_for_status()
        return dict(response.json())

    def reset(self) -> None:
        self.control(reset=True)


def _first_line(stream: IO[str], into: queue.Queue[str]) -> None:
    into.put(stream.readline())


@contextmanager
def mcp_upstream(*, timeout: float = 60) -> Iterator[McpUpstream]:
    """Start the upstream, wait until it prints its URL (it does once it accepts connections), yield it,
    and stop it (terminate, then kill if it lingers)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # Its log goes to a file, not a pipe nobody reads (a full pipe would stall it).
    log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed in the finally below, after the process)
    process = subprocess.Popen(
        [sys.executable, "-m", "examples.after_sales_agent.tools_server", "--host", "127.0.0.1", "--port", "0"],
        cwd=BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=_first_line, args=(process.stdout, lines), daemon=True).start()
        deadline = time.monotonic() + timeout
        url = ""
        while not url:
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"the MCP upstream exited ({process.returncode}): {log.read()}")
            if time.monotonic() > deadline:
                raise TimeoutError("the MCP upstream did not print its URL in time")
            try:
                url = lines.get(timeout=0.1).strip()
            except queue.Empty:
                continue
        yield McpUpstream(url=url, process=process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
