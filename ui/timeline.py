"""The run page's timeline: one bar per visit on an axis of time since the run started, with
waits drawn as waits.

A run's time is mostly not work: a person answering a task takes hours where tools take
milliseconds, and a failed run may lie failed for a day before someone resumes it. Drawn to
scale, that time squashes every working bar into a hairline. So :func:`layout` keeps working
time to scale and shortens every stretch where nothing works — a human task waiting, or no
visit at all — to at most :data:`GAP_SHARE` of the working time; those stretches are drawn as
hatched ``waiting`` bars (or left as gaps) labelled with their real length. The axis is labelled
in real elapsed time at each tick, so its words stay true across a shortened stretch. Every bar
carries its real duration as text. Pure: the page feeds it the visit rows and draws the spec.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ui import format as fmt

#: A shortened stretch is drawn at most this share of the run's working time long...
GAP_SHARE = 0.08
#: ...and a bar at least this share of the whole axis wide (a 2 ms visit stays visible).
MIN_BAR_SHARE = 0.006
#: Above this many visits, one row per node instead of one per visit.
ROWS_PER_VISIT_UP_TO = 60
#: Human tasks wait for a person: their time is waiting, not work.
WAITING_TYPES = ("human_task",)
COLOURS = {"completed": "#66bb6a", "failed": "#e53935", "running": "#ffb300", "paused": "#ffb300",
           "waiting": "#90a4ae", "skipped": "#bdbdbd", "cancelled": "#616161", "crashed": "#8e24aa"}


@dataclass(frozen=True)
class Layout:
    rows: list[dict[str, Any]]
    ticks: list[tuple[float, str]]  # (position on the drawn axis, real elapsed time as words)
    shortened: bool


def _seconds(a: datetime, b: datetime) -> float:
    return max(0.0, fmt.seconds_between(a, b) or 0.0)


def layout(visits: Sequence[Mapping[str, Any]], now: datetime) -> Layout:
    if not visits:
        return Layout([], [], False)
    t0 = min(v["started_at"] for v in visits)
    spans = []
    for v in visits:
        start = _seconds(t0, v["started_at"])
        end = _seconds(t0, v["ended_at"] or now)
        waiting = v["node_type"] in WAITING_TYPES or v["status"] == "paused"
        spans.append((start, max(end, start), waiting))
    # the drawn axis: elementary stretches between every start and end, at scale where a
    # non-waiting visit covers them, shortened where none does
    cuts = sorted({0.0, *(s for s, _, _ in spans), *(e for _, e, _ in spans)})
    index = {c: i for i, c in enumerate(cuts)}
    opened = [0] * len(cuts)  # a sweep: how many working visits cover each stretch
    for start, end, waiting in spans:
        if not waiting and end > start:
            opened[index[start]] += 1
            opened[index[end]] -= 1
    covered, depth = [], 0
    for i in range(len(cuts) - 1):
        depth += opened[i]
        covered.append(depth > 0)
    stretches = list(zip(cuts, cuts[1:], covered, strict=False))
    work_total = sum(b - a for a, b, work in stretches if work) or 1.0
    cap = GAP_SHARE * work_total
    shortened = False
    drawn = [0.0]
    for a, b, work in stretches:
        real = b - a
        if not work and real > cap:
            real, shortened = cap, True
        drawn.append(drawn[-1] + real)
    position = dict(zip(cuts, drawn, strict=True))
    total = drawn[-1] or 1.0
    min_bar = MIN_BAR_SHARE * total
    per_visit = len(visits) <= ROWS_PER_VISIT_UP_TO
    rows = []
    for v, (start, end, waiting) in zip(visits, spans, strict=True):
        x0, x1 = position[start], position[end]
        item = f"[{v['item_key']}]" if v.get("item_key") else ""
        took = fmt.duration(end - start) or "0 ms"
        rows.append({
            "row": f"#{v['sequence']} {v['node_id']}{item}" if per_visit else v["node_id"],
            "node": v["node_id"],
            "status": "waiting" if waiting and v["status"] in ("paused", "completed") else v["status"],
            "kind": "waiting" if waiting else "work", "x0": x0, "x1": max(x1, x0 + min_bar),
            "took": ("waited " if waiting else "") + took + ("" if v["ended_at"] else " so far"),
            "started": fmt.when(v["started_at"]), "ended": fmt.when(v["ended_at"]) or "—",
        })
    ticks = []
    for i in range(6):
        at = total * i / 5
        # the real elapsed time at this drawn position (inverse of the piecewise map)
        for (ra, da), (rb, db) in zip(position.items(), list(position.items())[1:], strict=False):
            if da <= at <= db:
                real = ra + (rb - ra) * ((at - da) / (db - da) if db > da else 0.0)
                break
        else:
            real = cuts[-1]
        text = "0 s" if i == 0 else fmt.duration(real)
        ticks.append((round(at, 6), "" if ticks and text == ticks[-1][1] else text))
    return Layout(rows, ticks, shortened)


def spec(lay: Layout) -> dict[str, Any]:
    """A Vega-Lite spec of the layout: bars, their durations as text, a legend on top."""
    label = " : ".join(f"datum.value == {at} ? '{text}'" for at, text in lay.ticks if text) + " : ''"
    present = [s for s in COLOURS if any(r["status"] == s for r in lay.rows)]
    per_visit = len({r["row"] for r in lay.rows}) == len(lay.rows)
    y = {"field": "row", "type": "nominal", "sort": None, "title": None,
         "axis": {"labelLimit": 280, "labelFontSize": 11}}
    x = {"field": "x0", "type": "quantitative", "scale": {"domain": [0, (lay.ticks[-1][0] if lay.ticks else 1) * 1.18]},
         "title": "time since the run started" + (" (waits and idle stretches shortened)" if lay.shortened else ""),
         "axis": {"values": [at for at, _ in lay.ticks], "labelExpr": label, "grid": True, "labelFontSize": 11}}
    tooltip = [{"field": f, "title": t} for f, t in
               (("row", "visit"), ("status", "status"), ("took", "took"), ("started", "started"), ("ended", "ended"))]
    layers: list[dict[str, Any]] = [{
        "mark": {"type": "bar", "cornerRadius": 2, "height": {"band": 0.7}},
        "encoding": {"y": y, "x": x, "x2": {"field": "x1"}, "tooltip": tooltip,
                     "color": {"field": "status", "type": "nominal", "title": None,
                               "scale": {"domain": present, "range": [COLOURS[s] for s in present]},
                               "legend": {"orient": "top", "direction": "horizontal", "labelFontSize": 11}},
                     "opacity": {"condition": {"test": "datum.kind == 'waiting'", "value": 0.45}, "value": 1},
                     "strokeDash": {"condition": {"test": "datum.kind == 'waiting'", "value": [4, 3]}, "value": [1, 0]},
                     "stroke": {"value": "#455a64"}, "strokeWidth": {"condition": {"test": "datum.kind == 'waiting'",
                                                                                  "value": 1}, "value": 0}},
    }]
    if per_visit:
        layers.append({"mark": {"type": "text", "align": "left", "dx": 4, "fontSize": 11, "color": "#37474f"},
                       "encoding": {"y": y, "x": {"field": "x1", "type": "quantitative"}, "text": {"field": "took"}}})
    return {"data": {"values": lay.rows}, "width": "container",
            "height": {"step": 22} if per_visit else {"step": 26}, "layer": layers,
            "config": {"view": {"stroke": None}}}
