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
from typing import IO

from decision_service.env import BASE_DIR
from examples.after_sales_agent.tools_server import UpstreamControl


class McpUpstream(UpstreamControl):
    """A running upstream: ``url`` is its MCP endpoint (``…/mcp``), ``base`` its origin; ``control``,
    ``calls`` and ``reset`` steer it (examples/after_sales_agent/tools_server.py)."""

    def __init__(self, url: str, process: subprocess.Popen[str]):
        super().__init__(url)
        self.process = process


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
