"""The report's pictures as inline SVG text (pure: events and figures in, markup out).

Each function returns one ``<svg>`` element with an ``id`` the tests and a reader can
find: ``waterfall`` (the launch phases per node), ``verdicts`` (the run monitor's
verdicts on a timeline), ``stragglers`` (each rank's straggler score over time, the
threshold drawn), ``restarts`` and ``heatmap`` (a doctor's node x node bandwidth, the
excluded nodes marked). Every mark has a ``<title>`` (the browser's tooltip).
"""
from __future__ import annotations

from html import escape
from typing import Any

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")
VERDICT_COLOURS = {"hang": "#d62728", "mismatch": "#9467bd", "stopped": "#ff7f0e", "straggler": "#e6a800",
                   "waiting": "#8c564b", "working": "#2ca02c"}
WIDTH = 900
LEFT = 130
RIGHT = 30


def _x(t: float, t0: float, span: float) -> float:
    return LEFT + (WIDTH - LEFT - RIGHT) * ((t - t0) / span if span > 0 else 0.0)


def _axis(t0: float, span: float, y: float) -> list[str]:
    """A time axis at Y: seconds since the run's first event."""
    out = [f'<line x1="{LEFT}" y1="{y}" x2="{WIDTH - RIGHT}" y2="{y}" stroke="#555"/>']
    steps = 5
    for i in range(steps + 1):
        t = t0 + span * i / steps
        x = _x(t, t0, span)
        out.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" stroke="#555"/>')
        label = f"{span * i / steps:.0f}" if span >= 20 else f"{span * i / steps:.2g}"
        out.append(f'<text x="{x:.1f}" y="{y + 16}" text-anchor="middle">{label} s</text>')
    return out


def _svg(ident: str, height: float, body: list[str], label: str) -> str:
    return (f'<svg id="{ident}" role="img" aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg" '
            f'width="{WIDTH}" height="{height:.0f}" viewBox="0 0 {WIDTH} {height:.0f}" '
            'font-family="sans-serif" font-size="12">' + "".join(body) + "</svg>")


def span_of(events: list[dict[str, Any]]) -> tuple[float, float]:
    """(first time, length in seconds) of EVENTS, phases' starts and ends included (pure)."""
    times = [float(e["t"]) for e in events]
    times += [float(e[k]) for e in events for k in ("start", "end") if isinstance(e.get(k), (int, float))]
    if not times:
        return 0.0, 1.0
    return min(times), max(max(times) - min(times), 0.001)


def waterfall(phases: list[dict[str, Any]], t0: float, span: float) -> str:
    """One row per node, one bar per launch phase from its start to its end (on the phases'
    own time axis: a launch takes seconds of a run that takes hours)."""
    nodes = sorted({int(e.get("node", 0)) for e in phases})
    names = list(dict.fromkeys(str(e.get("phase", "?")) for e in phases))
    row = 22
    body: list[str] = []
    for i, node in enumerate(nodes):
        y = 10 + i * row
        host = next((str(e.get("host", "")) for e in phases if int(e.get("node", 0)) == node), "")
        body.append(f'<text x="{LEFT - 8}" y="{y + 14}" text-anchor="end">node {node} {escape(host)}</text>')
        for e in (e for e in phases if int(e.get("node", 0)) == node):
            start = float(e.get("start", e["t"]))
            end = float(e.get("end", start))
            name = str(e.get("phase", "?"))
            x0, x1 = _x(start, t0, span), _x(end, t0, span)
            colour = PALETTE[names.index(name) % len(PALETTE)]
            body.append(f'<rect class="phase" x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 2):.1f}" height="{row - 6}" '
                        f'fill="{colour}"><title>node {node}: {escape(name)} {end - start:.3f} s</title></rect>')
    bottom = 10 + len(nodes) * row + 6
    body += _axis(t0, span, bottom)
    for j, name in enumerate(names):  # the legend
        x = LEFT + j * 110
        body.append(f'<rect x="{x}" y="{bottom + 26}" width="10" height="10" fill="{PALETTE[j % len(PALETTE)]}"/>'
                    f'<text x="{x + 14}" y="{bottom + 35}">{escape(name)}</text>')
    return _svg("waterfall", bottom + 46, body, "launch phases per node")


def verdicts(items: list[dict[str, Any]], t0: float, span: float) -> str:
    """One mark per verdict on a timeline, a row per kind, its line as the tooltip."""
    kinds = list(dict.fromkeys(str(e.get("verdict", "?")) for e in items))
    row = 24
    body: list[str] = []
    for i, kind in enumerate(kinds):
        y = 12 + i * row
        colour = VERDICT_COLOURS.get(kind, "#333")
        body.append(f'<text x="{LEFT - 8}" y="{y + 4}" text-anchor="end">{escape(kind)}</text>')
        for e in (e for e in items if str(e.get("verdict", "?")) == kind):
            x = _x(float(e["t"]), t0, span)
            ranks = ", ".join(str(r) for r in e.get("ranks") or [])
            tip = f"node {e.get('node', 0)}: {e.get('text', kind)}" + (f" (ranks {ranks})" if ranks else "")
            body.append(f'<circle class="verdict verdict-{escape(kind)}" cx="{x:.1f}" cy="{y}" r="6" '
                        f'fill="{colour}"><title>{escape(tip)}</title></circle>')
    bottom = 12 + len(kinds) * row
    body += _axis(t0, span, bottom)
    return _svg("verdicts", bottom + 24, body, "run monitor verdicts over time")


def stragglers(rounds: list[dict[str, Any]], t0: float, span: float, threshold: float, in_a_row: int) -> str:
    """Each rank's straggler score (0..1) per round as a line; the WARN threshold dashed."""
    series: dict[str, list[tuple[float, float]]] = {}
    for e in rounds:
        for rank, score in (e.get("scores") or {}).items():
            series.setdefault(str(rank), []).append((float(e["t"]), float(score)))
    top, height = 14.0, 200.0

    def y(score: float) -> float:
        return top + height * (1.0 - max(0.0, min(1.0, score)))

    body = [f'<line x1="{LEFT}" y1="{top}" x2="{LEFT}" y2="{top + height}" stroke="#555"/>']
    for v in (0.0, 0.5, 1.0):
        body.append(f'<text x="{LEFT - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.1f}</text>')
    body.append(f'<line id="threshold" x1="{LEFT}" y1="{y(threshold):.1f}" x2="{WIDTH - RIGHT}" '
                f'y2="{y(threshold):.1f}" stroke="#d62728" stroke-dasharray="6 4"><title>WARN at {threshold} '
                f'for {in_a_row} rounds in a row</title></line>')
    ranks = sorted(series, key=lambda r: (len(r), r))
    for i, rank in enumerate(ranks):
        colour = PALETTE[i % len(PALETTE)]
        points = " ".join(f"{_x(t, t0, span):.1f},{y(s):.1f}" for t, s in series[rank])
        body.append(f'<polyline class="straggler-series" data-rank="{escape(rank)}" points="{points}" fill="none" '
                    f'stroke="{colour}" stroke-width="2"><title>rank {escape(rank)}</title></polyline>')
        for t, s in series[rank]:
            body.append(f'<circle cx="{_x(t, t0, span):.1f}" cy="{y(s):.1f}" r="3" fill="{colour}">'
                        f'<title>rank {escape(rank)}: {s:.2f} at {t - t0:.0f} s</title></circle>')
        body.append(f'<rect x="{LEFT + i * 80}" y="{top + height + 30}" width="10" height="10" fill="{colour}"/>'
                    f'<text x="{LEFT + i * 80 + 14}" y="{top + height + 39}">rank {escape(rank)}</text>')
    body += _axis(t0, span, top + height)
    return _svg("stragglers", top + height + 50, body, "straggler score per rank over time")


def restarts(items: list[dict[str, Any]], t0: float, span: float) -> str:
    """One flag per restart of the run, its reason and the hosts left out as the tooltip."""
    body = []
    for e in items:
        x = _x(float(e["t"]), t0, span)
        left = ", ".join(str(h) for h in e.get("left_out") or [])
        tip = f"restart {e.get('attempt', '?')}: {e.get('reason', '')}" + (f"; left out {left}" if left else "")
        body.append(f'<g class="restart"><line x1="{x:.1f}" y1="8" x2="{x:.1f}" y2="40" stroke="#d62728" '
                    f'stroke-width="2"/><text x="{x + 4:.1f}" y="20">#{escape(str(e.get("attempt", "?")))}</text>'
                    f'<title>{escape(tip)}</title></g>')
    body += _axis(t0, span, 40)
    return _svg("restarts", 64, body, "restarts over time")


def _heat(gbps: float, best: float) -> str:
    """White (0) to dark blue (the best pair) (pure)."""
    f = max(0.0, min(1.0, gbps / best)) if best > 0 else 0.0
    r, g, b = (int(255 - (255 - c) * f) for c in (8, 69, 148))
    return f"rgb({r},{g},{b})"


def heatmap(hosts: list[str], gbps: dict[tuple[str, str], float], excluded: set[str],
            suspects: set[str]) -> str:
    """A node x node grid of pair bandwidth; excluded nodes' labels struck red, suspects amber."""
    cell = max(14, min(40, 640 // max(len(hosts), 1)))
    left, top = 140, 120
    best = max(gbps.values(), default=0.0)
    body = []
    for i, host in enumerate(hosts):
        mark = "excluded" if host in excluded else "suspect" if host in suspects else "node"
        colour = "#d62728" if mark == "excluded" else "#b8860b" if mark == "suspect" else "#222"
        suffix = " (excluded)" if mark == "excluded" else " (suspect)" if mark == "suspect" else ""
        yc = top + i * cell + cell / 2 + 4
        body.append(f'<text class="{mark}" x="{left - 6}" y="{yc:.1f}" text-anchor="end" fill="{colour}">'
                    f'{escape(host)}{suffix}</text>')
        xc = left + i * cell + cell / 2
        body.append(f'<text class="{mark}" transform="translate({xc + 4:.1f},{top - 6}) rotate(-60)" '
                    f'fill="{colour}">{escape(host)}</text>')
        for j, other in enumerate(hosts):
            x, y = left + j * cell, top + i * cell
            value = gbps.get((host, other))
            fill = "#eee" if value is None else _heat(value, best)
            tip = f"{host} - {other}: " + ("not measured" if value is None else f"{value:.3g} GB/s")
            body.append(f'<rect class="cell" x="{x}" y="{y}" width="{cell - 1}" height="{cell - 1}" '
                        f'fill="{fill}"><title>{escape(tip)}</title></rect>')
        if host in excluded:
            body.append(f'<rect class="excluded-row" x="{left - 1}" y="{top + i * cell - 1}" '
                        f'width="{len(hosts) * cell + 1}" height="{cell + 1}" fill="none" stroke="#d62728" '
                        'stroke-width="2"/>')
    bottom = top + len(hosts) * cell + 24
    body.append(f'<text x="{left}" y="{bottom}">pair bandwidth, GB/s: white 0, dark blue {best:.3g} '
                '(the fastest pair); grey: not measured</text>')
    width = max(WIDTH, left + len(hosts) * cell + 40)
    return (f'<svg id="heatmap" role="img" aria-label="node by node bandwidth" xmlns="http://www.w3.org/2000/svg" '
            f'width="{width}" height="{bottom + 12}" viewBox="0 0 {width} {bottom + 12}" font-family="sans-serif" '
            'font-size="12">' + "".join(body) + "</svg>")
