"""Charts drawn on the server as SVG: no script, no CDN, nothing for the browser to fetch.

Every label and value is escaped here (``xml.sax.saxutils``), so the markup is safe to put on a page.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape, quoteattr

from django.utils.translation import gettext

BAR_HEIGHT = 22
LABEL_WIDTH = 260
BAR_WIDTH = 360
FONT = "font-family: system-ui, sans-serif; font-size: 12px"


def bar_chart_svg(bars: Sequence[tuple[str, float]], *, title: str, unit: str = "") -> str:
    """Horizontal bars, one per (label, value), longest value full width; empty bars list → a note."""
    if not bars:
        nothing = gettext("nothing to show")
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{LABEL_WIDTH + BAR_WIDTH}" height="28">'
            f'<title>{escape(title)}</title><text x="0" y="18" style="{FONT}">{escape(nothing)}</text></svg>'
        )
    top = max(value for _, value in bars) or 1
    height = BAR_HEIGHT * len(bars) + 8
    width = LABEL_WIDTH + BAR_WIDTH + 70
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="arbiter-chart" width="{width}" height="{height}" '
        f"aria-label={quoteattr(title)}><title>{escape(title)}</title>"
    ]
    for index, (label, value) in enumerate(bars):
        y = index * BAR_HEIGHT + 4
        length = max(1.0, BAR_WIDTH * value / top) if value else 0.0
        shown = f"{value:g}{unit}"
        parts.append(
            f"<g><title>{escape(label)}: {escape(shown)}</title>"
            f'<text x="{LABEL_WIDTH - 6}" y="{y + 14}" text-anchor="end" style="{FONT}">{escape(label)}</text>'
            f'<rect x="{LABEL_WIDTH}" y="{y}" width="{length:.1f}" height="{BAR_HEIGHT - 6}" fill="#417690"></rect>'
            f'<text x="{LABEL_WIDTH + length + 6:.1f}" y="{y + 14}" style="{FONT}">{escape(shown)}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)
