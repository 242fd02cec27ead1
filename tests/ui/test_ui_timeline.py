"""The run page's timeline layout (ui/timeline.py): working time to scale, waits shortened and
labelled with their real length, an axis labelled in real elapsed time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ui.timeline import GAP_SHARE, layout, spec

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


def _v(seq, node, start_s, end_s, status="completed", node_type="tool", item=None):
    return {"sequence": seq, "node_id": node, "node_type": node_type, "item_key": item, "status": status,
            "started_at": T0 + timedelta(seconds=start_s),
            "ended_at": None if end_s is None else T0 + timedelta(seconds=end_s)}


def _width(row):
    return row["x1"] - row["x0"]


def test_a_long_human_wait_does_not_squash_the_working_bars():
    visits = [_v(1, "prepare", 0, 2), _v(2, "review", 2, 2 + 3 * 3600, node_type="human_task"),
              _v(3, "publish", 2 + 3 * 3600, 4 + 3 * 3600)]
    lay = layout(visits, T0 + timedelta(hours=4))
    prepare, review, publish = lay.rows
    assert lay.shortened
    assert abs(_width(prepare) - 2) < 1e-6 and abs(_width(publish) - 2) < 1e-6, "work stays to scale"
    assert _width(review) <= GAP_SHARE * 4 + 1e-6, "the three hours are drawn short"
    assert review["kind"] == "waiting" and review["took"] == "waited 3 h 0 min"
    assert prepare["took"] == "2.0 s" and prepare["row"] == "#1 prepare"
    assert lay.ticks[0] == (0.0, "0 s") and "3 h 0 min" in [t for _, t in lay.ticks], "the axis says real elapsed time"
    assert review["status"] == "waiting"


def test_an_idle_stretch_between_a_failure_and_its_resume_is_shortened_too():
    visits = [_v(1, "first", 0, 1), _v(2, "explode", 1, 1.5, status="failed"), _v(3, "explode", 86400, 86401)]
    lay = layout(visits, T0 + timedelta(days=2))
    assert lay.shortened and lay.rows[2]["x0"] < 2 + GAP_SHARE * 3


def test_tiny_and_running_visits_stay_visible_and_say_so():
    lay = layout([_v(1, "a", 0, 10), _v(2, "b", 10, 10.002), _v(3, "c", 10.002, None, status="running")],
                 T0 + timedelta(seconds=12))
    assert _width(lay.rows[1]) > 0.05 and lay.rows[1]["took"] == "2 ms"
    assert lay.rows[2]["took"].endswith("so far")
    chart = spec(lay)
    assert chart["layer"][0]["encoding"]["color"]["legend"]["orient"] == "top"
    assert "datum.value == 0.0 ? '0 s'" in chart["layer"][0]["encoding"]["x"]["axis"]["labelExpr"]


def test_many_visits_get_one_row_per_node():
    visits = [_v(i, "tick" if i % 2 else "check", i * 0.01, i * 0.01 + 0.005) for i in range(1, 2001)]
    lay = layout(visits, T0 + timedelta(minutes=1))
    assert {r["row"] for r in lay.rows} == {"tick", "check"} and len(spec(lay)["layer"]) == 1
