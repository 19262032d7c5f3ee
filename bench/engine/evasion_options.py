"""What issue 21's keyword evasion options cost: the text pre-pass and a whole decision, before and after.

    .venv/bin/python -m bench.engine.evasion_options [--rounds N] [--cpu C]

*before*: the keyword lists as issue 10 left them (Traditional folding and CJK gaps on, none of the options
of rules 0019, substring lists, no unless phrases): what a list migrated from before reads like. *after*:
every option on; the seed point as the demo configures it (its high_risk list ``segmented``, its keyword
rule with ``unless`` phrases). Inputs: the seed point's short messages, the 200-rule point's generated
texts (up to 500 CJK characters), and 10,000-character messages (ordinary after-sales text repeated, with
punctuation, Latin and digits). Pre-pass = ``normalize_text`` + ``scanner.scan``; evaluate = the whole
native ``evaluate`` (the decide path's engine step). Also rjieba against jieba on the same sentences.
"""

from __future__ import annotations

import argparse
import copy
import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bench.engine.workload import NOW, generated_workload, seed_workloads
from rules.engine import compile_config, evaluate
from rules.engine.evasion import EVASION_DEFAULTS, EVASION_OPTIONS
from rules.engine.normalize import normalize_text

ORDINARY = [
    "我想查一下我的订单什么时候发货",
    "快递到哪里了，能帮我看看物流吗？",
    "这个商品有现货吗，尺码偏大还是偏小",
    "I would like to change my delivery address, order 20231101001",
    "发票抬头写错了怎么办，电话是010-62345678",
    "东西坏了能换吗？包装有点破损，但东西没事。",
]


def before(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """The snapshot as issue 10 left its lists: no new options, substring, no unless phrases."""
    snap = copy.deepcopy(dict(snapshot))
    for kl in snap["keyword_lists"]:
        for option in EVASION_OPTIONS:
            kl[option] = False
        if kl.get("match") == "segmented":
            kl["match"] = "substring"
    for point in snap["points"]:
        for rule in point.get("rules", []):
            for c in rule.get("conditions", []):
                c.pop("unless", None)
    return snap


def after(snapshot: Mapping[str, Any], *, pinyin: bool = False, demo: bool = False) -> dict[str, Any]:
    """Every option at its default for a new list (pinyin as asked); ``demo``: the high_risk list and its rule
    as demo/after_sales.yaml has them (segmented, pinyin, the unless phrases of seed 001, negated hits dropped)."""
    snap = copy.deepcopy(dict(snapshot))
    for kl in snap["keyword_lists"]:
        kl.update(dict.fromkeys(("fold_traditional", "ignore_cjk_gaps"), True), **EVASION_DEFAULTS)
        kl["match_pinyin"] = pinyin
        if demo and kl["key"] == "high_risk":
            kl.update(match="segmented", match_pinyin=True, terms=[*kl["terms"], "police"])
    if demo:
        for point in snap["points"]:
            for rule in point.get("rules", []):
                for c in rule.get("conditions", []):
                    if c.get("input_contains") == "high_risk":
                        c["unless"] = list(DEMO_UNLESS)
                        c["unless_negated"] = True  # code from before it ignores the key
    return snap


DEMO_UNLESS = ("不是要投诉", "不是投诉", "不想投诉", "不打算投诉", "没有要投诉")
VARIANTS: dict[str, dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]]] = {
    "seed intent_routing": {"before": before, "after (the demo's lists)": lambda s: after(s, demo=True)},
    "generated 200 rules": {
        "before": before,
        "after (defaults)": after,
        "after, pinyin on every list": lambda s: after(s, pinyin=True),
    },
}


def p(sorted_ns: Sequence[int], q: float) -> float:
    return sorted_ns[min(len(sorted_ns) - 1, int(q * len(sorted_ns)))] / 1000


def measure(fn: Callable[[Any], Any], items: Sequence[Any], rounds: int) -> tuple[float, float]:
    samples: list[int] = []
    pc = time.perf_counter_ns
    for _ in range(rounds):
        for item in items:
            t = pc()
            fn(item)
            samples.append(pc() - t)
    samples.sort()
    return p(samples, 0.5), p(samples, 0.99)


def long_texts(n: int, rng: random.Random) -> list[str]:
    out = []
    for _ in range(n):
        parts: list[str] = []
        while sum(map(len, parts)) < 10_000:
            parts.append(rng.choice(ORDINARY))
        out.append("".join(parts)[:10_000])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.engine.evasion_options")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cpu", type=int, default=0, help="CPU to pin to (-1: do not pin)")
    args = parser.parse_args(argv)
    if args.cpu >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
    rng = random.Random(21)  # noqa: S311 - benchmark data
    seed = seed_workloads(1000)[0]
    generated = generated_workload(2000)
    rows = []
    for workload in (seed, generated):
        texts = [r.text for r in workload.requests if r.text]
        inputs = {"short" if workload is seed else "generated ≤500": texts, "10,000 chars": long_texts(20, rng)}
        for variant, shape in VARIANTS[workload.name].items():
            point = compile_config(shape(workload.snapshot), revision=1).points[workload.point]
            for label, items in inputs.items():
                pre = measure(lambda t, point=point: point.scanner.scan(normalize_text(t)), items, args.rounds)
                rounds = args.rounds if label != "10,000 chars" else max(1, args.rounds // 2)
                whole = measure(
                    lambda t, point=point: evaluate(point, text=t, candidate=None, facts={}, now=NOW), items, rounds
                )
                rows.append((workload.name, label, variant, *pre, *whole))
    print("| point | inputs | lists | pre-pass p50 µs | pre-pass p99 µs | evaluate p50 µs | evaluate p99 µs |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for name, label, variant, a, b, c, d in rows:
        print(f"| {name} | {label} | {variant} | {a:.1f} | {b:.1f} | {c:.1f} | {d:.1f} |")
    # The 200-rule point's p50 on its own requests (candidate and facts too), as bench/engine/run.py measures it.
    for variant, shape in VARIANTS[generated.name].items():
        point = compile_config(shape(generated.snapshot), revision=1).points[generated.point]
        reqs = generated.requests

        def decide(r: Any, point: Any = point) -> Any:
            return evaluate(point, text=r.text, candidate=r.candidate, facts=r.facts, now=NOW)

        p50, p99 = measure(decide, reqs, args.rounds)
        print(f"\n200-rule point, whole requests, {variant}: p50 {p50:.1f} µs, p99 {p99:.1f} µs")
    segmenters(args.rounds)
    return 0


def segmenters(rounds: int) -> None:
    import jieba
    import rjieba

    jieba.setLogLevel(60)
    jieba.lcut("预热")
    sentences = [*ORDINARY, "我不是要投诉，只是问一下流程", "烟雾报警器坏了，怎么换电池"]
    r = measure(lambda s: rjieba.cut(s, True), sentences, rounds * 200)
    j = measure(lambda s: jieba.lcut(s, HMM=True), sentences, rounds * 200)
    same = sum(1 for s in sentences if rjieba.cut(s, True) == jieba.lcut(s, HMM=True))
    print(
        f"\nsegmenters on {len(sentences)} sentences: rjieba p50 {r[0]:.1f} µs (p99 {r[1]:.1f}), "
        f"jieba p50 {j[0]:.1f} µs (p99 {j[1]:.1f}); same words for {same} of {len(sentences)}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
