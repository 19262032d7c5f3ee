"""Server-side SVG charts for the decision-point map: no script, no chart library, nothing from a CDN.

Each function returns SVG markup built only from numbers this module formats and text it escapes, so
the admin template can mark it safe. Every bar carries a ``<title>`` (the tooltip and what a screen
reader says), and a bar that stands for decisions is a link to the filtered decision log behind it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

RULED_BY_COLOURS = {"hard_rule": "#c0392b", "llm_candidate": "#2e86c1", "default": "#7f8c8d"}
RULED_BY_LABELS = {"hard_rule": _("hard rule"), "llm_candidate": _("LLM candidate"), "default": _("default")}
WIDTH, HEIGHT, PAD = 640, 180, 32

Link = Callable[..., str]


def _a(href: str | None, inner: str) -> str:
    return f'<a href="{escape(href)}">{inner}</a>' if href else inner


def _svg(kind: str, title: str, body: str, height: int = HEIGHT) -> str:
    return (
        f'<svg class="chart chart-{kind}" role="img" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}">'
        f"<title>{escape(title)}</title>{body}</svg>"
    )


def _day_label(day: str) -> str:
    return day[5:]  # MM-DD


def ruled_by_share(point: str, daily: Sequence[Mapping[str, Any]], link: Link) -> str:
    """A 100% stacked bar per day: the share of hard rule, LLM candidate and default decisions."""
    n = max(len(daily), 1)
    slot = (WIDTH - 2 * PAD) / n
    bar = max(slot * 0.7, 1.0)
    plot = HEIGHT - 2 * PAD
    parts = [
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" stroke="#999" />',
        f'<text x="4" y="{PAD + 4}" font-size="10">100%</text>',
        f'<text x="4" y="{HEIGHT - PAD}" font-size="10">0%</text>',
    ]
    for i, day in enumerate(daily):
        x = PAD + i * slot + (slot - bar) / 2
        total = day["decisions"]
        y = float(HEIGHT - PAD)
        for kind, colour in RULED_BY_COLOURS.items():
            count = day.get(kind, 0)
            if not total or not count:
                continue
            h = plot * count / total
            y -= h
            tip = gettext("%(day)s: %(ruled_by)s %(count)s of %(total)s (%(share).0f%%)") % {
                "day": day["day"],
                "ruled_by": RULED_BY_LABELS[kind],
                "count": count,
                "total": total,
                "share": 100 * count / total,
            }
            rect = (
                f'<rect class="bar bar-{kind}" x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{colour}"><title>{escape(tip)}</title></rect>'
            )
            parts.append(_a(link(point=point, day=day["day"], ruled_by=kind), rect))
        if not total:
            empty = gettext("%(day)s: no decisions") % {"day": day["day"]}
            parts.append(
                f'<rect class="bar bar-empty" x="{x:.1f}" y="{HEIGHT - PAD - 1}" width="{bar:.1f}" height="1" '
                f'fill="#ddd"><title>{escape(empty)}</title></rect>'
            )
        if n <= 31 and (n <= 16 or i % 2 == 0):
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{HEIGHT - PAD + 14}" font-size="9" text-anchor="middle">'
                f"{escape(_day_label(day['day']))}</text>"
            )
    legend_x = PAD
    for kind, colour in RULED_BY_COLOURS.items():
        parts.append(f'<rect x="{legend_x}" y="6" width="10" height="10" fill="{colour}" />')
        parts.append(f'<text x="{legend_x + 14}" y="15" font-size="10">{escape(str(RULED_BY_LABELS[kind]))}</text>')
        legend_x += 110
    return _svg("ruled-by", gettext("%(point)s: share of ruled_by per day") % {"point": point}, "".join(parts))


def override_rate(point: str, daily: Sequence[Mapping[str, Any]], link: Link) -> str:
    """The override rate per day (overridden ÷ decisions with a candidate) as a line with dots; days
    without a candidate are gaps."""
    n = max(len(daily), 1)
    slot = (WIDTH - 2 * PAD) / n
    plot = HEIGHT - 2 * PAD
    parts = [
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" stroke="#999" />',
        f'<line x1="{PAD}" y1="{PAD}" x2="{WIDTH - PAD}" y2="{PAD}" stroke="#eee" />',
        f'<text x="4" y="{PAD + 4}" font-size="10">100%</text>',
        f'<text x="4" y="{HEIGHT - PAD}" font-size="10">0%</text>',
    ]
    segment: list[str] = []
    segments: list[list[str]] = [segment]
    for i, day in enumerate(daily):
        rate = day.get("override_rate")
        x = PAD + i * slot + slot / 2
        if rate is None:
            segment = []
            segments.append(segment)
            continue
        y = HEIGHT - PAD - plot * rate
        segment.append(f"{x:.1f},{y:.1f}")
        tip = gettext("%(day)s: %(overridden)s of %(candidates)s candidates overridden (%(rate).0f%%)") % {
            "day": day["day"],
            "overridden": day["overridden"],
            "candidates": day["with_candidate"],
            "rate": 100 * rate,
        }
        dot = (
            f'<circle class="dot" cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="#8e44ad">'
            f"<title>{escape(tip)}</title></circle>"
        )
        parts.append(_a(link(point=point, day=day["day"], overridden=True), dot))
    for points in segments:
        if len(points) > 1:
            parts.insert(0, f'<polyline points="{" ".join(points)}" fill="none" stroke="#8e44ad" stroke-width="1.5" />')
    return _svg("override-rate", gettext("%(point)s: override rate per day") % {"point": point}, "".join(parts))


def rule_hits(point: str, rules: Sequence[Mapping[str, Any]], link: Link) -> str:
    """Horizontal bars: how often each rule held in the window (the part it decided darker)."""
    rows = list(rules) or [{"key": gettext("(no rule held)"), "hits": 0, "decided": 0}]
    row_h, label_w = 20, 180
    height = PAD + row_h * len(rows)
    widest = max((r["hits"] for r in rows), default=0) or 1
    span = WIDTH - label_w - 60
    parts = []
    for i, r in enumerate(rows):
        y = 10 + i * row_h
        w = span * r["hits"] / widest
        d = span * r["decided"] / widest
        tip = gettext("%(rule)s: held %(hits)s times, decided %(decided)s") % {
            "rule": r["key"],
            "hits": r["hits"],
            "decided": r["decided"],
        }
        parts.append(f'<text x="4" y="{y + 12}" font-size="11">{escape(r["key"])}</text>')
        held = (
            f'<rect class="bar bar-held" x="{label_w}" y="{y}" width="{w:.1f}" height="14" fill="#aed6f1">'
            f"<title>{escape(tip)}</title></rect>"
        )
        parts.append(_a(link(point=point, matched_rule=r["key"]) if r["hits"] else None, held))
        if r["decided"]:
            won = (
                f'<rect class="bar bar-decided" x="{label_w}" y="{y}" width="{d:.1f}" height="14" fill="#2874a6">'
                f"<title>{escape(tip)}</title></rect>"
            )
            parts.append(_a(link(point=point, rule_key=r["key"]), won))
        parts.append(f'<text x="{label_w + w + 4:.1f}" y="{y + 12}" font-size="10">{r["hits"]}</text>')
    return _svg("rule-hits", gettext("%(point)s: hits per rule") % {"point": point}, "".join(parts), height=height)
