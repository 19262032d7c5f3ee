"""Run the reference conversations against an Arbiter and print a transcript.

    python -m examples.after_sales_agent.run --base-url http://127.0.0.1:8000 --token arb_…

The model is the scripted one of each conversation unless ``--model openai`` (``OPENAI_BASE_URL``,
``OPENAI_API_KEY``, ``ARBITER_AGENT_MODEL``). Each turn prints who decided, the Arbiter and model
calls it cost; the end prints the calls per turn and the share of turns that needed no model call.
With ``OTEL_EXPORTER_OTLP_ENDPOINT`` set, the agent's spans (each turn, model call and tool run) are
exported there, and Arbiter's — when Arbiter exports to the same place — are their children.
A turn that does not come out as its conversation expects is reported (exit status 1).
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter_client import Arbiter, Session
from opentelemetry.trace import Tracer

from examples.after_sales_agent.agent import AfterSalesAgent, ToolTurn, Turn
from examples.after_sales_agent.conversations import conversation_load, conversation_paths
from examples.after_sales_agent.llm import Model, OpenAICompatibleModel, ScriptedModel
from examples.after_sales_agent.mcp_tools import McpToolSide, shown
from examples.after_sales_agent.tools import OrderSystem
from examples.after_sales_agent.tools_server import UpstreamControl


@dataclass
class Outcome:
    name: str
    turns: list[Turn]
    mismatches: list[str]
    session_id: str = ""
    tools: list[ToolTurn] = field(default_factory=list)


Wait = Callable[[Session, float], None]


def conversation_run(
    arbiter: Arbiter,
    path: Path,
    *,
    model: Model | None = None,
    out: Callable[[str], None] | None = print,
    session_prefix: str = "",
    points: dict[tuple[str, int], Any] | None = None,
    wait: Wait | None = None,
    tracer: Tracer | None = None,
    mcp: McpToolSide | None = None,
    upstream: UpstreamControl | None = None,
) -> Outcome:
    """Run one conversation. A step ``wait: N`` is the customer saying nothing for N seconds:
    ``wait(session, N)`` lets that time pass for the server (its timeout sweep), and is required then.
    ``open: STATE`` moves the new session there first (the greeting), outside the turns. A step
    ``tool: NAME`` with ``input`` is a tool call the model asked for, run through ``call_tool`` on the
    mock order system (``upstream:`` sets what it answers first: ``{script: [CODE, …]}``).

    With ``mcp`` (the MCP mode) a tool step is one ``tools/call`` through Arbiter's gateway, and ``upstream``
    (the MCP order server's control routes) is given the step's script and counts the tool's runs; a
    step's ``arbiter_calls`` is not checked then (one MCP request, where the REST mode makes several)."""
    spec = conversation_load(path)
    scripted = ScriptedModel()
    agent = AfterSalesAgent(arbiter, model or scripted, out=out, points=points, tracer=tracer)
    session = agent.start(machine=spec["machine"], session_id=f"{session_prefix}{spec['name']}-{uuid.uuid4().hex[:8]}")
    if spec.get("open"):  # the greeting: a step of the agent's own, in a span like a turn's
        with agent.tracer.start_as_current_span("agent.open", attributes={"arbiter.session.id": session.session_id}):
            session.move(spec["open"], reason="conversation opened")
    turns, mismatches, tools = [], [], []
    orders = OrderSystem()
    try:
        for number, step in enumerate(spec["turns"], 1):
            if "tool" in step and mcp is not None:
                tool_turn = _mcp_tool_step(mcp, upstream, session, step)
                tools.append(tool_turn)
                expect = {k: v for k, v in (step.get("expect") or {}).items() if k != "arbiter_calls"}
                if upstream is None:
                    expect.pop("tool_runs", None)
                mismatches += _unexpected(f"{spec['name']} step {number}", tool_turn, expect)
                if out is not None:
                    out(shown(tool_turn))
                continue
            if "tool" in step:
                orders.script[:] = list((step.get("upstream") or {}).get("script") or [])
                fn = orders.functions()[step["tool"]]
                tool_turn = agent.use_tool(session, step["tool"], step.get("input") or {}, fn)
                tools.append(tool_turn)
                mismatches += _unexpected(f"{spec['name']} step {number}", tool_turn, step.get("expect"))
                continue
            if "wait" in step:
                if wait is None:
                    raise ValueError(f"{spec['name']} waits for a timeout: pass wait=")
                wait(session, float(step["wait"]))
                continue
            if model is None:
                scripted.answers.clear()
                if "model" in step:
                    scripted.push(step["model"])
            point = step.get("point", "intent_routing")
            turn = agent.turn(session, step["user"], point=point, facts=step.get("facts"))
            turns.append(turn)
            mismatches += _unexpected(f"{spec['name']} turn {number}", turn, step.get("expect"))
        agent.report_traces(session)
    finally:
        agent.close()
    return Outcome(spec["name"], turns, mismatches, session.session_id, tools)


def _mcp_tool_step(mcp: McpToolSide, upstream: UpstreamControl | None, session: Session, step: Any) -> ToolTurn:
    name = mcp.name(step["tool"]).split(".", 1)[1]  # as the upstream names it
    if upstream is not None:
        script = list((step.get("upstream") or {}).get("script") or [])
        upstream.control(fail_next={name: script})
        before = upstream.calls()["counts"].get(name, 0)
    turn = mcp.use(session, step["tool"], step.get("input") or {})
    if upstream is not None:
        turn.tool_runs = upstream.calls()["counts"].get(name, 0) - before
    return turn


def _unexpected(where: str, turn: Any, expect: dict[str, Any] | None) -> list[str]:
    found = []
    for key, wanted in (expect or {}).items():
        got = getattr(turn, key)
        if got != wanted:
            found.append(f"{where}: {key} is {got!r}, expected {wanted!r}")
    return found


def summary(outcomes: list[Outcome]) -> dict[str, float]:
    """Per message turn (a tool call the model asked for is not a message: ``Outcome.tools``)."""
    turns = [t for o in outcomes for t in o.turns]
    if not turns:  # tool steps only (``--only tool_…``)
        return {"turns": 0}
    return {
        "turns": len(turns),
        "arbiter_calls_per_turn": sum(t.arbiter_calls for t in turns) / len(turns),
        "model_calls_per_turn": sum(t.model_calls for t in turns) / len(turns),
        "turns_without_model_call": sum(1 for t in turns if t.model_calls == 0) / len(turns),
    }


def traces_setup(environ: Mapping[str, str] = os.environ) -> Callable[[], None]:
    """The agent's spans exported over OTLP/HTTP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or the traces one)
    is set, as the SDK reads it (service name ``after-sales-agent`` unless ``OTEL_SERVICE_NAME`` says);
    returns what flushes them at the end. Without it the spans go nowhere, and cost next to nothing."""
    wanted = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not wanted or environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return lambda: None
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    named = {} if environ.get("OTEL_SERVICE_NAME") else {"service.name": "after-sales-agent"}
    provider = TracerProvider(resource=Resource.create(named))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider.shutdown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--model", choices=["scripted", "openai"], default="scripted")
    parser.add_argument(
        "--mcp",
        action="store_true",
        help="the MCP mode: tools through Arbiter's gateway at /mcp only (the decides stay on REST)",
    )
    parser.add_argument(
        "--upstream",
        help="with --mcp: the MCP order server's URL (tools_server), to script its failures and count its runs",
    )
    parser.add_argument("--only", default="", help="the conversations to run, by name, comma-separated (default: all)")
    args = parser.parse_args(argv)
    wanted = {n for n in args.only.split(",") if n}
    model = OpenAICompatibleModel.from_environment() if args.model == "openai" else None
    outcomes = []
    points: dict[tuple[str, int], Any] = {}
    flush = traces_setup()
    with Arbiter(args.base_url, args.token) as arbiter:
        mcp = McpToolSide.for_agent(arbiter) if args.mcp else None
        upstream = UpstreamControl(args.upstream) if args.mcp and args.upstream else None
        try:
            for path in conversation_paths():
                if wanted and path.stem not in wanted:
                    continue
                print(f"== {path.stem}")
                outcomes.append(conversation_run(arbiter, path, model=model, points=points, mcp=mcp, upstream=upstream))
        finally:
            if mcp is not None:
                mcp.close()
    flush()
    print(summary(outcomes), {"tool_calls": sum(len(o.tools) for o in outcomes)})
    problems = [m for o in outcomes for m in o.mismatches]
    for problem in problems:
        print("MISMATCH", problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
