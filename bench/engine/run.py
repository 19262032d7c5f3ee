"""Side-by-side benchmark of the engine backends: native, durable (when it compiles) and GoRules zen-engine.

    .venv/bin/python -m bench.engine.run            # the full run behind bench/RESULTS.md (a few minutes)
    .venv/bin/python -m bench.engine.run --quick    # a smoke test (seconds)

Every backend decides the same requests. Rounds alternate the backends (the order rotates every round) so
that machine noise hits them all alike; each round times every call on its own (latency) and then the whole
batch without per-call timers (throughput). The process is pinned to one CPU. Prints a Markdown report.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import gc
import importlib.metadata
import io
import os
import platform
import pstats
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.engine.scanners import PyAhoScanner
from bench.engine.workload import NOW, Request, Workload, generated_workload, seed_workloads
from bench.engine.zen_jdm import ZenPoint
from bench.engine.zen_jdm import outcome as zen_outcome
from rules.engine import Decision, compile_config, evaluate
from rules.engine.compiler import CompiledPoint, keyword_scanner
from rules.engine.keywords import KeywordListSpec
from rules.engine.normalize import normalize_text

Outcome = tuple[str | None, str | None, str | None]


@dataclass(frozen=True)
class Plan:
    seed_requests: int
    generated_requests: int
    seed_rounds: int  # each round: every backend decides every request once timed per call, once in a loop
    generated_rounds: int
    compile_repeats: int
    backend_budget_s: float  # a backend slower than this per workload stops early (fewer samples, noted)
    loader_requests: int


FULL = Plan(
    seed_requests=1000,
    generated_requests=2000,
    seed_rounds=100,
    generated_rounds=60,
    compile_repeats=20,
    backend_budget_s=45,
    loader_requests=300,
)
QUICK = Plan(
    seed_requests=200,
    generated_requests=200,
    seed_rounds=3,
    generated_rounds=3,
    compile_repeats=3,
    backend_budget_s=5,
    loader_requests=30,
)

TARGETS = {
    "seed_p50_us": 10.0,
    "generated_p50_us": 30.0,
    "generated_p99_us": 100.0,
    "throughput_vs_zen": 3.0,
    "compile_ms": 100.0,
}


@dataclass
class Backend:
    name: str
    decide: Callable[[Request], Any]
    agrees: Callable[[Decision, Any], bool]  # does this backend's answer agree with native's Decision?
    latencies: list[int] = field(default_factory=list)
    loops: list[int] = field(default_factory=list)  # ns per loop over all requests
    loop_n: int = 0
    spent_ns: int = 0  # wall time in measured passes
    cpu_ns: int = 0  # this thread's CPU time in the same passes: less than spent_ns when others took the CPU
    stopped_early: bool = False


@dataclass
class Result:
    workload: Workload
    backends: list[Backend]
    notes: list[str]
    stats: dict[str, Any]


def native_outcome(d: Decision) -> Outcome:
    return d.decision, d.ruled_by, d.rule.key if d.rule else None


def evaluator(point: CompiledPoint) -> Callable[[Request], Decision]:
    def decide(req: Request) -> Decision:
        return evaluate(point, text=req.text, candidate=req.candidate, facts=req.facts, now=NOW)

    return decide


def percentile(sorted_values: Sequence[int], q: float) -> float:
    return float(sorted_values[min(len(sorted_values) - 1, round(q * (len(sorted_values) - 1)))])


# --- measuring -----------------------------------------------------------------------------------------


def timed(decide: Callable[[Request], Any], requests: Sequence[Request], out: list[int]) -> int:
    pc = time.perf_counter_ns
    append = out.append
    start = pc()
    for req in requests:
        t0 = pc()
        decide(req)
        append(pc() - t0)
    return pc() - start


def looped(decide: Callable[[Request], Any], requests: Sequence[Request]) -> int:
    pc = time.perf_counter_ns
    t0 = pc()
    for req in requests:
        decide(req)
    return pc() - t0


def run_rounds(backends: list[Backend], requests: Sequence[Request], rounds: int, budget_s: float) -> None:
    for b in backends:  # warm-up: every request once per backend
        looped(b.decide, requests)
    gc.collect()
    budget_ns = int(budget_s * 1e9)
    for r in range(rounds):
        k = r % len(backends)
        order = backends[k:] + backends[:k]  # who goes first rotates every round
        for b in order:
            if b.spent_ns > budget_ns:
                b.stopped_early = True
                continue
            cpu = time.thread_time_ns()
            b.spent_ns += timed(b.decide, requests, b.latencies)
            b.cpu_ns += time.thread_time_ns() - cpu
        for b in reversed(order):
            if b.stopped_early:
                continue
            cpu = time.thread_time_ns()
            ns = looped(b.decide, requests)
            b.cpu_ns += time.thread_time_ns() - cpu
            b.spent_ns += ns
            b.loops.append(ns)
            b.loop_n = len(requests)


def workload_stats(point: CompiledPoint, requests: Sequence[Request], zen: ZenPoint | None) -> dict[str, Any]:
    ruled: Counter[str] = Counter()
    matched = 0
    positions: list[int] = []
    keys = [r.key for r in point.spec.rules]
    enforce_keys = [r.key for r in point.spec.rules if not r.shadow]
    for req in requests:
        d = evaluate(point, text=req.text, candidate=req.candidate, facts=req.facts, now=NOW)
        ruled[d.ruled_by or "ask (needs candidate)"] += 1
        matched += len(d.matched_rules)
        if d.rule is not None:
            positions.append(enforce_keys.index(d.rule.key) + 1)
    lengths = [len(r.text) for r in requests]
    return {
        "requests": len(requests),
        "rules": len(keys),
        "keyword_lists": len(point.spec.keyword_lists),
        "mean_chars": sum(lengths) / len(lengths),
        "max_chars": max(lengths),
        "ruled_by": {k: v / len(requests) for k, v in sorted(ruled.items())},
        "mean_matched": matched / len(requests),
        "mean_winner_row": (sum(positions) / len(positions)) if positions else None,
        "zen_rows": zen.rows if zen else None,
    }


def same_decision(want: Decision, got: Any) -> bool:
    """durable goes through the same ``evaluate``: the whole Decision must be equal (all matched rules too)."""
    return bool(want.as_dict() == got.as_dict())


def same_winner(want: Decision, got: Any) -> bool:
    """zen's first-hit table gives only the winner: compare decision, ruled_by and the winning rule."""
    return native_outcome(want) == zen_outcome(got)


def check_agreement(native: Backend, others: list[Backend], requests: Sequence[Request]) -> dict[str, list[str]]:
    """Each other backend against native, on every request of the workload (it doubles as a warm-up)."""
    problems: dict[str, list[str]] = {b.name: [] for b in others}
    for req in requests:
        want = native.decide(req)
        for b in others:
            got = b.decide(req)
            if not b.agrees(want, got):
                problems[b.name].append(f"{req!r}: native {native_outcome(want)}, {b.name} {got!r}")
    return problems


def measure_workload(workload: Workload, plan: Plan) -> Result:
    notes: list[str] = []
    native_point = compile_config(workload.snapshot, revision=1, backend="native").points[workload.point]
    native = Backend("native", evaluator(native_point), same_decision)
    backends = [native]
    try:
        durable_point = compile_config(workload.snapshot, revision=1, backend="durable").points[workload.point]
    except Exception as exc:  # absent, or refused this point: reported, not hidden
        notes.append(f"durable: not measured — compile_config(backend='durable') raised {type(exc).__name__}: {exc}")
    else:
        backends.append(Backend("durable", evaluator(durable_point), same_decision))
    zen = ZenPoint(native_point)
    backends.append(Backend("zen", zen.decider(), same_winner))

    problems = check_agreement(native, backends[1:], workload.requests)
    for name, found in problems.items():
        if found:
            notes.append(
                f"{name}: {len(found)} of {len(workload.requests)} decisions differ from native, e.g. {found[0]}"
            )
    # zen's table is generated here, so a disagreement is a bug in the translation: stop rather than time it.
    assert not problems["zen"], f"zen disagrees with native on {len(problems['zen'])} requests: {problems['zen'][:3]}"
    stats = workload_stats(native_point, workload.requests, zen)
    rounds = plan.generated_rounds if workload.name.startswith("generated") else plan.seed_rounds
    run_rounds(backends, workload.requests, rounds, plan.backend_budget_s)
    for b in backends:
        if b.stopped_early:
            notes.append(f"{b.name}: stopped after its {plan.backend_budget_s:g} s budget ({len(b.latencies)} samples)")
    return Result(workload, backends, notes, stats)


def compile_times(snapshot: dict[str, Any], point: str, repeats: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for backend in ("native", "durable"):
        samples: list[int] = []
        try:
            for _ in range(repeats if backend == "native" else max(1, repeats // 4)):
                keyword_scanner.cache_clear()  # a whole compile, as of lists never compiled before
                gc.collect()
                t0 = time.perf_counter_ns()
                compile_config(snapshot, revision=1, backend=backend)
                samples.append(time.perf_counter_ns() - t0)
        except Exception as exc:
            out[backend] = f"{type(exc).__name__}: {exc}"
            continue
        out[backend] = sorted(samples)
    native_point = compile_config(snapshot, revision=1).points[point]
    samples = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter_ns()
        zp = ZenPoint(native_point)  # JDM generation + ZenDecisionContent parse; the AC scanner is shared
        zp.engine.evaluate(zp.key, {"kw": {}, "cand": None, "conf": None, "facts": {}})  # first call builds the graph
        samples.append(time.perf_counter_ns() - t0)
    out["zen"] = sorted(samples)
    return out


def stage_breakdown(workload: Workload) -> dict[str, float]:
    """p50 µs of each stage of a decision, timed separately: the shared pre-pass, then each backend's part."""
    point = compile_config(workload.snapshot, revision=1).points[workload.point]
    zp = ZenPoint(point)
    scan = point.scanner.scan
    matcher = point.matcher
    zen_evaluate = zp.engine.evaluate
    names = (
        "normalize_text",
        "scanner.scan",
        "native matcher",
        "native evaluate (total)",
        "native evaluate − pre-pass",
        "zen evaluate only",
    )
    stages: dict[str, list[int]] = {name: [] for name in names}
    pc = time.perf_counter_ns
    for _ in range(3):
        for req in workload.requests:
            c = req.candidate
            t0 = pc()
            norm = normalize_text(req.text)
            t1 = pc()
            mask, _found = scan(norm)
            t2 = pc()
            matcher(mask, c.decision if c else None, c.confidence if c else None, req.facts, None, NOW)
            t3 = pc()
            evaluate(point, text=req.text, candidate=c, facts=req.facts, now=NOW)
            t4 = pc()
            context = {
                "kw": zp.keyword_hits(mask),
                "cand": c.decision if c else None,
                "conf": c.confidence if c else None,
                "facts": req.facts,
            }
            t5 = pc()
            zen_evaluate(zp.key, context)
            t6 = pc()
            after = (t4 - t3) - (t2 - t0)  # per request: what evaluate spends beyond normalising and scanning
            for name, ns in zip(names, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, after, t6 - t5), strict=True):
                stages[name].append(ns)
    return {k: percentile(sorted(v), 0.5) / 1000 for k, v in stages.items()}


def scanner_comparison(workload: Workload, rounds: int) -> dict[str, Any]:
    """daachorse (what ``KeywordScanner`` uses) against pyahocorasick (what it used before), on the same
    normalised inputs, alternating: p50 µs and total time per scan, and whether they found the same hits."""
    point = compile_config(workload.snapshot, revision=1).points[workload.point]
    lists = [
        KeywordListSpec(key=kl["key"], match=kl.get("match", "substring"), terms=tuple(kl.get("terms", [])))
        for kl in workload.snapshot["keyword_lists"]
        if kl["key"] in point.spec.keyword_lists
    ]
    t0 = time.perf_counter_ns()
    old = PyAhoScanner(sorted(lists, key=lambda kl: point.spec.keyword_lists.index(kl.key)))
    build_ms = (time.perf_counter_ns() - t0) / 1e6
    texts = [normalize_text(r.text) for r in workload.requests]
    scanners: dict[str, Callable[[str], Any]] = {"daachorse": point.scanner.scan, "pyahocorasick": old.scan}
    disagree = sum(1 for t in texts if scanners["daachorse"](t) != scanners["pyahocorasick"](t))
    samples: dict[str, list[int]] = {name: [] for name in scanners}
    totals: dict[str, int] = dict.fromkeys(scanners, 0)
    pc = time.perf_counter_ns
    for r in range(rounds):
        for name in list(scanners)[r % 2 :] + list(scanners)[: r % 2]:
            scan, out = scanners[name], samples[name]
            for text in texts:
                t = pc()
                scan(text)
                out.append(pc() - t)
            t = pc()
            for text in texts:
                scan(text)
            totals[name] += pc() - t
    n = rounds * len(texts)
    return {
        "p50": {name: percentile(sorted(v), 0.5) / 1000 for name, v in samples.items()},
        "p99": {name: percentile(sorted(v), 0.99) / 1000 for name, v in samples.items()},
        "mean": {name: totals[name] / n / 1000 for name in scanners},
        "disagree": disagree,
        "texts": len(texts),
        "pyaho_build_ms": build_ms,
    }


def _with_evasion_options(snapshot: Mapping[str, Any], *, fold: bool, gaps: bool) -> dict[str, Any]:
    lists = [{**kl, "fold_traditional": fold, "ignore_cjk_gaps": gaps} for kl in snapshot["keyword_lists"]]
    return {**snapshot, "keyword_lists": lists}


def evasion_comparison(workload: Workload, rounds: int) -> dict[str, Any]:
    """What keyword-evasion matching costs: the point's pre-pass (``normalize_text`` + ``scan``) and a whole
    ``evaluate``, for the workload's snapshot as it was (a revision from before: no options, format characters
    seen), with format characters ignored but both options off, and with both options on (the default).
    Alternating, same requests; also how many decisions and hits the options change on these inputs."""
    variants = {
        "before": workload.snapshot,
        "format only": _with_evasion_options(workload.snapshot, fold=False, gaps=False),
        "options on": _with_evasion_options(workload.snapshot, fold=True, gaps=True),
    }
    points = {name: compile_config(snap, revision=1).points[workload.point] for name, snap in variants.items()}
    requests = workload.requests
    decisions = {
        name: [evaluate(p, text=r.text, candidate=r.candidate, facts=r.facts, now=NOW) for r in requests]
        for name, p in points.items()
    }
    changed = sum(
        1 for a, b in zip(decisions["before"], decisions["options on"], strict=True) if a.decision != b.decision
    )
    more_hits = sum(
        1 for a, b in zip(decisions["before"], decisions["options on"], strict=True) if a.keyword_hits != b.keyword_hits
    )
    prepass: dict[str, list[int]] = {name: [] for name in points}
    whole: dict[str, list[int]] = {name: [] for name in points}
    pc = time.perf_counter_ns
    names = list(points)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            point = points[name]
            scan = point.scanner.scan
            pre, out = prepass[name], whole[name]
            for req in requests:
                t0 = pc()
                scan(normalize_text(req.text))
                t1 = pc()
                evaluate(point, text=req.text, candidate=req.candidate, facts=req.facts, now=NOW)
                t2 = pc()
                pre.append(t1 - t0)
                out.append(t2 - t1)
    return {
        "prepass_p50": {n: percentile(sorted(v), 0.5) / 1000 for n, v in prepass.items()},
        "prepass_p99": {n: percentile(sorted(v), 0.99) / 1000 for n, v in prepass.items()},
        "evaluate_p50": {n: percentile(sorted(v), 0.5) / 1000 for n, v in whole.items()},
        "evaluate_p99": {n: percentile(sorted(v), 0.99) / 1000 for n, v in whole.items()},
        "changed": changed,
        "more_hits": more_hits,
        "requests": len(requests),
    }


def zen_loaders(workload: Workload, n: int) -> dict[str, float]:
    """p50 µs of the three ways to hand zen-engine its document (alternated, few calls)."""
    point = compile_config(workload.snapshot, revision=1).points[workload.point]
    deciders = {name: ZenPoint(point, loader=name).decider() for name in ("content", "static", "json")}
    requests = workload.requests[:n]
    samples: dict[str, list[int]] = {name: [] for name in deciders}
    for decide in deciders.values():
        looped(decide, requests[:5])
    for r in range(5):
        for name in list(deciders)[r % 3 :] + list(deciders)[: r % 3]:
            timed(deciders[name], requests, samples[name])
    return {name: percentile(sorted(v), 0.5) / 1000 for name, v in samples.items()}


def profile_native(workload: Workload, passes: int) -> str:
    point = compile_config(workload.snapshot, revision=1).points[workload.point]
    decide = evaluator(point)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(passes):
        for req in workload.requests:
            decide(req)
    profiler.disable()
    buf = io.StringIO()
    pstats.Stats(profiler, stream=buf).sort_stats("tottime").print_stats(14)
    return buf.getvalue()


# --- reporting -----------------------------------------------------------------------------------------


def machine() -> list[str]:
    model = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    versions = []
    for dist in ("daachorse", "pyahocorasick", "zen-engine", "durable_rules"):
        try:
            versions.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{dist} (not installed)")
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "n/a"
    return [
        f"- nproc: {os.cpu_count()}; this process pinned to CPU(s) {affinity}",
        f"- CPU: {model}",
        f"- Python {platform.python_version()} ({platform.python_implementation()}), {platform.platform()}",
        f"- packages: {', '.join(versions)}",
    ]


def timer_overhead_ns() -> float:
    pc = time.perf_counter_ns
    samples = []
    for _ in range(20000):
        t0 = pc()
        samples.append(pc() - t0)
    return percentile(sorted(samples), 0.5)


def us(ns: float) -> str:
    return f"{ns / 1000:.1f}"


def summarize(b: Backend) -> dict[str, float]:
    s = sorted(b.latencies)
    return {
        "p50": percentile(s, 0.5),
        "p90": percentile(s, 0.9),
        "p99": percentile(s, 0.99),
        "mean": sum(s) / len(s),
        # The median loop, not the total: a round that another process interrupts does not drag it down.
        "throughput": b.loop_n / (sorted(b.loops)[len(b.loops) // 2] / 1e9) if b.loops else 0.0,
        "throughput_total": len(b.loops) * b.loop_n / (sum(b.loops) / 1e9) if b.loops else 0.0,
        "samples": len(s),
        "on_cpu": b.cpu_ns / b.spent_ns if b.spent_ns else 0.0,
    }


def report(results: list[Result], compiles: dict[str, Any], extras: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [
        f"Run: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}, `{args.command}` "
        f"({'quick' if args.quick else 'full'}; {extras['elapsed']:.0f} s)",
        "",
        *machine(),
        f"- perf_counter_ns() back-to-back: {extras['timer_ns']:.0f} ns (included in every latency sample)",
        f"- load average (1 min) at start / end: {extras['load'][0]:.2f} / {extras['load'][1]:.2f} "
        "(other processes on the machine count here)",
        "",
    ]
    summaries: dict[str, dict[str, dict[str, float]]] = {}
    for res in results:
        w, st = res.workload, res.stats
        ruled = ", ".join(f"{k} {v:.0%}" for k, v in st["ruled_by"].items())
        lines += [
            f"### {w.name}",
            "",
            f"{w.description}. {st['requests']} distinct requests, text {st['mean_chars']:.0f} chars on average "
            f"(max {st['max_chars']}); {st['rules']} compiled rules, {st['keyword_lists']} keyword lists, "
            f"zen table {st['zen_rows']} rows. Decided by: {ruled}. Matched rules per request: "
            f"{st['mean_matched']:.1f}"
            + (
                f"; winning rule at enforce row {st['mean_winner_row']:.1f} on average."
                if st["mean_winner_row"]
                else "."
            ),
            "",
            "| backend | p50 µs | p90 µs | p99 µs | mean µs | decisions/s, 1 core (median round) | "
            "decisions/s (all rounds) | on CPU | latency samples |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        sums = {b.name: summarize(b) for b in res.backends}
        summaries[w.name] = sums
        for name, s in sums.items():
            lines.append(
                f"| {name} | {us(s['p50'])} | {us(s['p90'])} | {us(s['p99'])} | {us(s['mean'])} | "
                f"{s['throughput']:,.0f} | {s['throughput_total']:,.0f} | {s['on_cpu']:.1%} | {s['samples']:,} |"
            )
        nat = sums["native"]
        for name, s in sums.items():
            if name == "native":
                continue
            lines.append("")
            lines.append(
                f"native vs {name}: p50 {s['p50'] / nat['p50']:.2f}× faster, p99 {s['p99'] / nat['p99']:.2f}× faster, "
                f"throughput {nat['throughput'] / s['throughput']:.2f}×"
            )
        if not any(b.name == "durable" for b in res.backends) or res.notes:
            lines.append("")
            lines += [f"- {note}" for note in res.notes]
        lines.append("")

    lines += ["### Compile time, generated 200-rule point", "", "| backend | min ms | median ms | max ms | runs |"]
    lines.append("| --- | ---: | ---: | ---: | ---: |")
    for name, samples in compiles.items():
        if isinstance(samples, str):
            lines.append(f"| {name} | — | — | — | failed: {samples} |")
        else:
            med = samples[len(samples) // 2]
            lines.append(
                f"| {name} | {samples[0] / 1e6:.1f} | {med / 1e6:.1f} | {samples[-1] / 1e6:.1f} | {len(samples)} |"
            )
    lines += [
        "",
        "native and durable: `compile_config(snapshot)` (validation, the Aho–Corasick automaton of 5,000 terms, "
        "the matcher). zen: JDM generation from the compiled spec + `ZenDecisionContent` + the first `evaluate` "
        "(the automaton is shared with native, not rebuilt).",
        "",
    ]

    gen = next((r for r in results if r.workload.name.startswith("generated")), None)
    seed = next((r for r in results if r.workload.name == "seed intent_routing"), None)
    verdicts: list[tuple[str, str, bool]] = []
    if seed:
        p50 = summaries[seed.workload.name]["native"]["p50"] / 1000
        verdicts.append(("native p50 ≤ 10 µs, seed point", f"{p50:.1f} µs", p50 <= TARGETS["seed_p50_us"]))
    if gen:
        gs = summaries[gen.workload.name]
        p50, p99 = gs["native"]["p50"] / 1000, gs["native"]["p99"] / 1000
        verdicts.append(("native p50 ≤ 30 µs, 200 rules", f"{p50:.1f} µs", p50 <= TARGETS["generated_p50_us"]))
        verdicts.append(("native p99 ≤ 100 µs, 200 rules", f"{p99:.1f} µs", p99 <= TARGETS["generated_p99_us"]))
        ratio = gs["native"]["throughput"] / gs["zen"]["throughput"]
        verdicts.append(
            ("native throughput ≥ 3× zen, 200 rules", f"{ratio:.2f}×", ratio >= TARGETS["throughput_vs_zen"])
        )
    native_compile = compiles.get("native")
    if isinstance(native_compile, list):
        med = native_compile[len(native_compile) // 2] / 1e6
        verdicts.append(("200-rule compile well under 100 ms", f"{med:.1f} ms median", med < TARGETS["compile_ms"]))
    lines += ["### Targets", "", "| target | measured | verdict |", "| --- | --- | --- |"]
    lines += [f"| {t} | {m} | {'met' if ok else '**missed**'} |" for t, m, ok in verdicts]
    lines.append("")

    if "breakdown" in extras:
        lines += ["### Where the time goes (p50 of each stage, timed separately)", ""]
        lines += ["| workload | " + " | ".join(next(iter(extras["breakdown"].values()))) + " |"]
        lines += ["| --- |" + " ---: |" * len(next(iter(extras["breakdown"].values())))]
        for name, stages in extras["breakdown"].items():
            lines.append(f"| {name} | " + " | ".join(f"{v:.1f} µs" for v in stages.values()) + " |")
        lines.append("")
        for name, st in extras["breakdown"].items():
            rest = st["native evaluate − pre-pass"]
            lines.append(
                f"- {name}: leaving out the shared pre-pass, native's matcher is "
                f"{st['zen evaluate only'] / st['native matcher']:.1f}× faster than zen's table evaluation, and the "
                f"rest of native's evaluate ({rest:.1f} µs: matcher, Decision, reason) "
                f"{st['zen evaluate only'] / rest:.1f}× faster."
            )
        lines.append("")
    if "loaders" in extras:
        lo = extras["loaders"]
        lines += [
            "### zen-engine loader variants (200-rule point, p50 µs, few calls)",
            "",
            "- loader callback returning a `ZenDecisionContent` built once (what the tables above time): "
            f"{lo['content']:.1f}",
            f"- built-in static loader (`{{'type': 'static', ...}}`): {lo['static']:.1f}",
            f"- loader callback returning the JDM JSON text: {lo['json']:.1f} — zen-engine calls the loader and "
            "parses the document on every `evaluate`",
            "",
        ]
    if "scanners" in extras:
        sc = extras["scanners"]
        p50, p99, mean = sc["p50"], sc["p99"], sc["mean"]
        lines += [
            "### Keyword scanners (200-rule point: 5,000 terms, the workload's inputs, normalised)",
            "",
            "| scanner | p50 µs | p99 µs | mean µs |",
            "| --- | ---: | ---: | ---: |",
            *(f"| {n} | {p50[n]:.1f} | {p99[n]:.1f} | {mean[n]:.1f} |" for n in ("daachorse", "pyahocorasick")),
            "",
            f"daachorse vs pyahocorasick: p50 {p50['pyahocorasick'] / p50['daachorse']:.2f}× faster, mean "
            f"{mean['pyahocorasick'] / mean['daachorse']:.2f}× faster. Inputs where the two found different hits: "
            f"{sc['disagree']} of {sc['texts']}.",
            "",
        ]
    if "evasion" in extras:
        lines += [
            "### Keyword evasion (rules.engine.keywords: format characters, Traditional folding, CJK gaps)",
            "",
            "Pre-pass = `normalize_text` + `scanner.scan`; evaluate = the whole native `evaluate`. *before*: the",
            "workload's snapshot as a revision from before rules 0011 reads it; *format only*: format characters",
            "ignored, both list options off; *options on*: both on (the default for lists with CJK terms).",
            "",
            "| workload | variant | pre-pass p50 µs | pre-pass p99 µs | evaluate p50 µs | evaluate p99 µs |",
            "| --- | --- | ---: | ---: | ---: | ---: |",
        ]
        for wname, ev in extras["evasion"].items():
            lines += [
                f"| {wname} | {v} | {ev['prepass_p50'][v]:.1f} | {ev['prepass_p99'][v]:.1f} | "
                f"{ev['evaluate_p50'][v]:.1f} | {ev['evaluate_p99'][v]:.1f} |"
                for v in ev["prepass_p50"]
            ]
        lines.append("")
        for wname, ev in extras["evasion"].items():
            lines.append(
                f"- {wname}: with the options on, {ev['changed']} of {ev['requests']} decisions and the keyword hits "
                f"of {ev['more_hits']} differ from *before* on these (evasion-free) inputs."
            )
        lines.append("")
    if "profile" in extras:
        lines += ["### cProfile, native, 200-rule point", "", "```", extras["profile"].strip(), "```", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.engine.run", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small run for smoke testing (seconds)")
    parser.add_argument("--cpu", type=int, default=0, help="CPU to pin the process to (default 0; -1: do not pin)")
    parser.add_argument("--profile", action="store_true", help="add a cProfile of native on the 200-rule point")
    parser.add_argument("--output", help="also write the report to this file")
    args = parser.parse_args(argv)
    args.command = ".venv/bin/python -m bench.engine.run" + "".join(
        f" {a}" for a in (sys.argv[1:] if argv is None else argv)
    )
    plan = QUICK if args.quick else FULL
    if args.cpu >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
    started = time.perf_counter()
    load_start = os.getloadavg()[0]

    workloads = [*seed_workloads(plan.seed_requests), generated_workload(plan.generated_requests)]
    results = []
    for w in workloads:
        print(f"… {w.name}", file=sys.stderr, flush=True)
        gc.collect()
        results.append(measure_workload(w, plan))
    gen = workloads[-1]
    print("… compile times, breakdown, loaders", file=sys.stderr, flush=True)
    compiles = compile_times(gen.snapshot, gen.point, plan.compile_repeats)
    extras: dict[str, Any] = {
        "timer_ns": timer_overhead_ns(),
        "breakdown": {w.name: stage_breakdown(w) for w in (workloads[0], gen)},
        "loaders": zen_loaders(gen, plan.loader_requests),
        "scanners": scanner_comparison(gen, 3 if args.quick else 10),
        "evasion": {w.name: evasion_comparison(w, 1 if args.quick else 5) for w in (workloads[0], gen)},
    }
    if args.profile:
        extras["profile"] = profile_native(gen, 1 if args.quick else 3)
    extras["elapsed"] = time.perf_counter() - started
    extras["load"] = (load_start, os.getloadavg()[0])
    text = report(results, compiles, extras, args)
    print(text)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
