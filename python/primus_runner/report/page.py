"""The report's one HTML page: inline CSS, the SVG pictures (svg.py), tables (pure).

Nothing is fetched: no stylesheet, font, image or script from anywhere; every text a
run wrote (hosts, verdict lines) is escaped.
"""
from __future__ import annotations

from html import escape
from typing import Any

from primus_runner.monitor import straggler
from primus_runner.report import svg
from primus_runner.report.load import Doctor, Run

CSS = """
body { font-family: sans-serif; margin: 2em auto; max-width: 960px; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
p.none { color: #777; font-style: italic; }
table { border-collapse: collapse; font-size: 0.9em; } td, th { border: 1px solid #ccc; padding: 2px 8px; }
td.FAIL { color: #d62728; font-weight: bold; } td.suspect { color: #b8860b; }
svg { display: block; margin: 0.5em 0; }
"""


def _page(title: str, sections: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
            f"<h1>{escape(title)}</h1>" + "".join(sections) + "</body></html>\n")


def _section(ident: str, heading: str, body: str, empty: str) -> str:
    inner = body if body else f'<p class="none">{escape(empty)}</p>'
    return f'<section id="section-{ident}"><h2>{escape(heading)}</h2>{inner}</section>'


def run_page(run: Run) -> str:
    t0, span = svg.span_of(run.events)
    nodes = sorted({int(e.get("node", 0)) for e in run.events})
    ends = run.of("end")
    codes = ", ".join(f"node {e.get('node', 0)}: {e.get('exit_code', '?')}" for e in ends) or "no end recorded"
    intro = (f"<p>{len(nodes)} node(s), {len(run.events)} event(s) over {span:.0f} s; exit codes: "
             f"{escape(codes)}. Records: {escape(', '.join(run.records))}.</p>")
    phases, verdicts, rounds, restarts = run.of("phase"), run.of("verdict"), run.of("straggler_scores"), \
        run.of("restart")
    sections = [
        intro,
        _section("waterfall", "Launch phases per node",
                 svg.waterfall(phases, *svg.span_of(phases)) if phases else "", "no launch phase recorded"),
        _section("verdicts", "Run monitor verdicts", (svg.verdicts(verdicts, t0, span) + _verdict_table(verdicts, t0))
                 if verdicts else "", "no verdict: the monitor saw the ranks progress"),
        _section("stragglers", "Straggler scores per rank",
                 svg.stragglers(rounds, t0, span, straggler.THRESHOLD, straggler.ROUNDS) if rounds else "",
                 "no straggler round recorded (a round lasts "
                 f"{straggler.ROUND_S:.0f} s and needs two ranks)"),
        _section("restarts", "Restarts", svg.restarts(restarts, t0, span) if restarts else "", "no restart"),
    ]
    return _page(f"primus-runner report: {run.title}", sections)


def _verdict_table(items: list[dict[str, Any]], t0: float) -> str:
    rows = "".join(f"<tr><td>{float(e['t']) - t0:.0f} s</td><td>{escape(str(e.get('node', 0)))}</td>"
                   f"<td>{escape(str(e.get('verdict', '')))}</td><td>{escape(str(e.get('text', '')))}</td></tr>"
                   for e in items)
    return f"<table><tr><th>at</th><th>node</th><th>verdict</th><th>line</th></tr>{rows}</table>"


def doctor_page(doc: Doctor) -> str:
    rows = "".join(f'<tr><td>{escape(h)}</td><td class="{escape(doc.status.get(h, ""))}">'
                   f'{escape(doc.status.get(h, "-"))}</td></tr>' for h in doc.hosts)
    excluded = ", ".join(sorted(doc.excluded)) or "none"
    intro = (f"<p>{len(doc.hosts)} node(s); excluded by the probe or a failed check: {escape(excluded)}.</p>"
             f"<table><tr><th>node</th><th>status</th></tr>{rows}</table>")
    heat = svg.heatmap(doc.hosts, doc.gbps, doc.excluded, doc.suspects) if doc.gbps else ""
    return _page(f"primus-runner doctor report: {doc.title}",
                 [intro, _section("heatmap", "Node x node bandwidth", heat,
                                  "no pair was measured (run the doctor with --probe on two nodes or more)")])
