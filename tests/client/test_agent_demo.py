"""``bin/agent-demo`` against a live server (ARBITER_URL, ARBITER_TOKEN): every reference conversation
runs, the transcript names who decided each turn and the calls made, and the summary lines add up.
The address conversations collect the phone into the session's field (refused, then normalised); one
waits for collecting_params' timeout: when the script says so, this test runs the real timeout sweep on
the server's database at a later time, and the script reads the handoff."""

from __future__ import annotations

import datetime as dt
import os
import queue
import re
import subprocess
import threading
import time

import pytest
from django.utils import timezone

from agents.sessions.timeouts import session_timeouts_sweep
from examples.after_sales_agent.config import AGENT_POINTS, agent_config_text
from tests.support import DEMO_TEXT, ROOT
from tests.support.live_sqlite import connection_per_request


@pytest.fixture
def live_config() -> str:
    return agent_config_text(DEMO_TEXT)


@pytest.fixture
def separate(live, live_server, tmp_path):
    """The sweep runs in this thread while the server answers the script: a connection each."""
    with connection_per_request(live_server, tmp_path / "agent-demo.sqlite3"):
        yield live


def test_agent_demo_runs_every_conversation_and_prints_the_summary(separate) -> None:
    live = separate
    bot = live.agent("agent_demo", points=AGENT_POINTS)
    token = bot.http.headers["Authorization"].removeprefix("Bearer ")
    env = {**os.environ, "ARBITER_URL": live.url, "ARBITER_TOKEN": token}
    script = subprocess.Popen(
        [str(ROOT / "bin" / "agent-demo")], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert script.stdout is not None
        for line in script.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + 300
    try:
        while (line := lines.get(timeout=max(0.1, deadline - time.monotonic()))) is not None:
            seen.append(line)
            if "waiting for the state's timeout" in line:
                assert session_timeouts_sweep(now=timezone.now() + dt.timedelta(seconds=31)) == 1
        assert script.wait(timeout=max(1, deadline - time.monotonic())) == 0, "\n".join(seen)
    finally:
        if script.poll() is None:
            script.kill()
    text = "\n".join(seen)
    assert [line for line in seen if line.startswith("== ")] == [
        "== change_address_no_phone",
        "== change_address_with_phone",
        "== complaint",
        "== invalid_output",
        "== low_confidence",
        "== off_whitelist",
        "== refund_300",
        "== refund_800",
        "== tool_invalid_phone",
        "== tool_query_order",
        "== tool_rate_limited",
    ]
    assert "decided by rule: human_handoff → state human_handoff (0 LLM calls)" in text
    assert "bot: (silent: a person has the conversation)" in text
    # The address change: the phone is collected into the session's field, refused, then normalised.
    assert "/fields 200" in text and "/events 422" in text and "/events 200" in text
    assert "    fields: receiver_phone refused (invalid_fields); missing for the tool: receiver_phone" in seen
    assert "    fields: receiver_phone normalised (digits)" in seen
    assert "decided by llm: change_address → state executing (1 LLM call)" in text
    # The tool calls the model asks for, through call_tool: refused by the schema, retried, given up.
    assert (
        "    invalid_tool_input (invalid_tool_input at /phone): the tool ran 0 time(s), 1 Arbiter call(s), state init"
        in seen
    )
    assert "    done: the tool ran 3 time(s), 6 Arbiter call(s), state init" in seen
    assert any(line.startswith("    gave_up (ORDER_NOT_FOUND): the tool ran 1 time(s)") for line in seen)
    assert "conversations: 11, turns: 18" in seen
    assert "turns without an LLM call: 6 of 18 (33%)" in seen
    per_turn = next(m for line in seen if (m := re.fullmatch(r"Arbiter calls per turn: (\d+\.\d\d)", line)))
    assert 1.0 <= float(per_turn.group(1)) < 3.0
