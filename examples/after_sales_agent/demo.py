"""``bin/agent-demo``: every reference conversation against Arbiter, as a transcript.

With ``ARBITER_URL`` and ``ARBITER_TOKEN`` it talks to that server (a conversation needing a point the
token may not call is reported and not run; a state's timeout is waited for, reading the session until
the server's sweep hands it over). Without them it starts its own: the embedded defaults of ``bin/demo``
(SQLite, in-process tasks) on a throwaway database in a temporary directory, the demo configuration
with the reference agent's additions (``config.py``), on a free port; there a timeout is made to pass by
running the real timeout sweep on that database at a later time (``manage.py shell``).

Per turn it prints the customer's message, who decided (rule, llm, default, or the person who has the
conversation), the decision, the state, the Arbiter calls made and the bot's reply; at the end the share
of turns that needed no LLM call and the Arbiter calls per turn. Exit status 1 when a turn did not
come out as its conversation expects.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
from arbiter_client import Arbiter, Session

from examples.after_sales_agent.agent import Turn
from examples.after_sales_agent.config import AGENT_POINTS, agent_config_text
from examples.after_sales_agent.conversations import conversation_load, conversation_paths
from examples.after_sales_agent.run import Outcome, Wait, conversation_run, summary

ROOT = Path(__file__).resolve().parents[2]
SWEEP = (
    "import datetime as dt; from django.utils import timezone; "
    "from agents.sessions.timeouts import session_timeouts_sweep as sweep; "
    "print(sweep(now=timezone.now() + dt.timedelta(seconds={seconds})))"
)


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(  # noqa: S603 (this interpreter, the repository's manage.py, our own arguments)
        [sys.executable, str(ROOT / "manage.py"), *args], env=env, cwd=ROOT, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {args[0]} failed:\n{done.stderr}")
    return done.stdout


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def embedded_server() -> Iterator[tuple[str, str, Wait]]:
    """A demo server of its own: (url, agent token, how a timeout is made to pass)."""
    with tempfile.TemporaryDirectory(prefix="arbiter-agent-demo-") as tmp:
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp}/arbiter.sqlite3"}
        env.pop("CELERY_BROKER_URL", None)
        config = Path(tmp) / "agent_demo.yaml"
        config.write_text(agent_config_text((ROOT / "demo" / "after_sales.yaml").read_text("utf-8")), "utf-8")
        print("starting a demo server on a throwaway database …", flush=True)
        _manage(env, "migrate", "--noinput")
        _manage(env, "demo_setup", "--file", str(config))
        token = _manage(env, "create_agent", "agent_demo", "--points", ",".join(AGENT_POINTS)).split()[-1]
        url = f"http://127.0.0.1:{_free_port()}"
        server = subprocess.Popen(  # noqa: S603 (as _manage's)
            [sys.executable, str(ROOT / "manage.py"), "runserver", "--noreload", url.removeprefix("http://")],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _ready(url, server)

            def sweep_later(session: Session, seconds: float) -> None:
                _manage(env, "shell", "-c", SWEEP.format(seconds=seconds + 1))

            yield url, token, sweep_later
        finally:
            server.terminate()
            server.wait(timeout=30)


def _ready(url: str, server: subprocess.Popen[bytes], deadline: float = 60.0) -> None:
    until = time.monotonic() + deadline
    while time.monotonic() < until:
        if server.poll() is not None:
            raise RuntimeError("the demo server stopped while starting")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)  # polling the server's start, with the deadline above
    raise RuntimeError(f"the demo server did not answer within {deadline:g} s")


def wait_for_handoff(session: Session, seconds: float) -> None:
    """A remote server's sweep runs on its own schedule: read the session until it is handed over,
    at most the timeout and a minute more."""
    until = time.monotonic() + seconds + 60
    while time.monotonic() < until:
        session.refresh()
        if session.handed_off:
            return
        time.sleep(0.5)
    raise RuntimeError(f"session {session.session_id} was not handed over within {seconds + 60:g} s")


def transcript(outcome: Outcome) -> list[str]:
    lines = []
    for turn in outcome.turns:
        lines.append(f"  customer: {turn.message}")
        lines.append(
            f"    decided by {turn.decided_by}: {turn.decision or '—'} → state {turn.state}"
            f" ({turn.model_calls} LLM call{'s' if turn.model_calls != 1 else ''})"
        )
        lines.append(f"    Arbiter calls ({turn.arbiter_calls}): {', '.join(turn.calls)}")
        if held := fields_line(turn):
            lines.append(f"    fields: {held}")
        lines.append(f"    bot: {turn.reply if turn.reply is not None else '(silent: a person has the conversation)'}")
    for call in outcome.tools:  # the tool calls the model asked for, each through session.call_tool
        refused = f" at {', '.join(call.errors)}" if call.errors else ""
        code = f" ({call.code}{refused})" if call.code else ""
        lines.append(f"  model calls {call.tool} {json.dumps(call.input, ensure_ascii=False)}")
        lines.append(
            f"    {call.outcome}{code}: the tool ran {call.tool_runs} time(s), "
            f"{call.arbiter_calls} Arbiter call(s), state {call.state}"
        )
        lines.append(f"    bot: {call.reply}")
    return lines


def fields_line(turn: Turn) -> str:
    """What the turn did with the session's fields: refused, normalised, still missing."""
    parts = [f"{name} refused (invalid_fields)" for name in turn.refused]
    parts += [f"{name} normalised ({', '.join(how)})" for name, how in turn.normalised.items()]
    if turn.missing:
        parts.append(f"missing for the tool: {', '.join(turn.missing)}")
    return "; ".join(parts)


def summary_lines(outcomes: list[Outcome]) -> list[str]:
    totals = summary(outcomes)
    turns = int(totals["turns"])
    without = round(totals["turns_without_model_call"] * turns)
    return [
        f"conversations: {len(outcomes)}, turns: {turns}",
        f"turns without an LLM call: {without} of {turns} ({totals['turns_without_model_call']:.0%})",
        f"Arbiter calls per turn: {totals['arbiter_calls_per_turn']:.2f}",
    ]


def run(url: str, token: str, wait: Wait) -> int:
    outcomes, problems = [], []
    with Arbiter(url, token) as arbiter:
        allowed = {p["key"] for p in arbiter.points()["points"]}
        points: dict[tuple[str, int], object] = {}
        for path in conversation_paths():
            spec = conversation_load(path)
            lacking = [p for p in spec.get("needs", []) if p not in allowed]
            if lacking:
                print(f"== {spec['name']}: not run, this agent may not call {', '.join(lacking)}")
                continue
            print(f"== {spec['name']}", flush=True)

            def announced(session: Session, seconds: float) -> None:
                print(f"  … the customer says nothing for {seconds:g} s (waiting for the state's timeout)", flush=True)
                wait(session, seconds)

            outcome = conversation_run(arbiter, path, out=None, points=points, wait=announced)
            print("\n".join(transcript(outcome)), flush=True)
            outcomes.append(outcome)
            problems.extend(outcome.mismatches)
    print("\n".join(summary_lines(outcomes)))
    for problem in problems:
        print("MISMATCH", problem, file=sys.stderr)
    return 1 if problems or not outcomes else 0


def main() -> int:
    url, token = os.environ.get("ARBITER_URL"), os.environ.get("ARBITER_TOKEN")
    with ExitStack() as stack:
        if url and token:
            return run(url, token, wait_for_handoff)
        url, token, sweep = stack.enter_context(embedded_server())
        return run(url, token, sweep)


if __name__ == "__main__":
    sys.exit(main())
