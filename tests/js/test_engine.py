"""The JavaScript sandbox (compiler.js.engine): real V8 in its worker process.

What code can reach (nothing but ECMAScript), the time and memory caps (the caller survives and
the next evaluation works), isolation between evaluations, and that checking definitions
without JavaScript never starts it. What an evaluation costs: ``benchmarks/js_sandbox.py``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from compiler.js import engine

ROOT = Path(__file__).resolve().parents[2]


def code(text: str, data: dict | None = None, **limits):
    return engine.run({"op": "code", "code": text, "data": data or {}}, **limits)


@pytest.mark.parametrize("name", ["require", "process", "fetch", "XMLHttpRequest", "WebSocket", "importScripts",
                                  "Deno", "Bun", "load", "read", "readline", "print", "quit", "os", "module",
                                  "__ergon_run", "Handlebars", "Papa"])
def test_the_code_sees_no_host_object(name: str) -> None:
    assert code(f"typeof {name}") == "undefined"


def test_a_dynamic_import_is_refused() -> None:
    assert code("import('fs').then(() => 'loaded', e => 'refused: ' + e.message)") == "refused: Not supported"
    assert code("import('https://example.org/x.js').then(() => 'loaded', () => 'refused')") == "refused"


def test_eval_and_function_stay_inside_the_sandbox() -> None:
    # they compile more JavaScript in the same isolate: nothing new becomes reachable
    assert code("new Function('return typeof require + typeof globalThis.process')()") == "undefinedundefined"
    assert code("eval('typeof fetch')") == "undefined"


def test_an_infinite_loop_is_stopped_at_the_time_limit_and_the_next_evaluation_works() -> None:
    started = time.monotonic()
    with pytest.raises(engine.JsLimitError) as info:
        code("while (true) {}", time_limit=0.5)
    assert info.value.kind == "time"
    assert "time limit of 0.5 s" in str(info.value)
    assert time.monotonic() - started < 5
    assert code("6 * 7") == 42


def test_a_promise_that_never_settles_is_stopped_at_the_time_limit() -> None:
    with pytest.raises(engine.JsLimitError) as info:
        code("new Promise(() => {})", time_limit=0.3)
    assert info.value.kind == "time"
    assert code("'next'") == "next"


def test_a_heap_memory_bomb_is_stopped_at_the_memory_limit_and_the_next_evaluation_works() -> None:
    with pytest.raises(engine.JsLimitError) as info:
        code("const a = []; for (;;) a.push(new Array(1e6).fill(1.5))", memory_limit=64 * 2**20, time_limit=20)
    assert info.value.kind == "memory"
    assert "memory limit of 64 MB" in str(info.value)
    assert code("[1, 2, 3].length") == 3


def test_memory_outside_the_heap_is_capped_by_the_worker_process() -> None:
    # typed arrays' buffers are not V8 heap: the worker's RLIMIT_DATA refuses them instead
    with pytest.raises(engine.JsError, match="Array buffer allocation failed"):
        code("const a = []; for (;;) a.push(new Float64Array(1e7).fill(1))", time_limit=20)
    assert code("'still here'") == "still here"


def test_an_allocation_v8_answers_by_aborting_costs_only_the_worker() -> None:
    # without a heap limit of its own the bomb reaches the worker's process ceiling, where V8
    # aborts the process: the caller gets a memory error and the next evaluation a new worker
    before = engine._worker.proc.pid if engine._worker.proc else None
    with pytest.raises(engine.JsLimitError) as info:
        code("const a = []; for (;;) a.push(new Array(1e6).fill(1.5))", memory_limit=64 * 2**30, time_limit=30)
    assert info.value.kind == "memory"
    assert "stopped its process" in str(info.value)
    assert code("1 + 1") == 2
    assert engine._worker.proc is not None and engine._worker.proc.pid != before


def test_nothing_one_evaluation_does_reaches_the_next() -> None:
    code("globalThis.leaked = 1; var declared = 2; Array.prototype.sum = function () { return 3 }; "
         "JSON.stringify = () => 'hijacked'; 0")
    assert code("[typeof leaked, typeof declared, typeof [].sum, JSON.stringify({a: 1})]") == [
        "undefined", "undefined", "undefined", '{"a":1}']


def test_the_data_are_the_codes_variables_and_the_value_comes_back_as_json() -> None:
    assert code("items.filter(i => i.total > limit).map(i => i.id)",
                {"items": [{"id": "a", "total": 5}, {"id": "b", "total": 50}], "limit": 10}) == ["b"]
    assert code("({n: null, ok: true, x: 1.5, s: 'é'})") == {"n": None, "ok": True, "x": 1.5, "s": "é"}
    assert code("(async () => 40 + 2)()") == 42


def test_an_exception_carries_its_line_and_column() -> None:
    with pytest.raises(engine.JsError) as info:
        code("const a = 1;\nnull.x")
    assert (info.value.line, info.value.column) == (2, 6)
    assert str(info.value).startswith("TypeError: Cannot read properties of null")


def test_a_value_that_is_not_json_is_an_error() -> None:
    with pytest.raises(engine.JsError, match="the code's value is undefined"):
        code("let x = 1;")
    with pytest.raises(engine.JsError, match="is a function, which is not JSON"):
        code("(() => 1)")


def test_analysis_parses_and_reports_positions() -> None:
    assert engine.analyse("javascript", "a + b.c")["free"] == [
        {"name": "a", "line": 1, "column": 0}, {"name": "b", "line": 1, "column": 4}]
    assert engine.analyse("javascript", "let x = 1;\nx +")["error"] == {"message": "Unexpected token", "line": 2, "column": 3}
    assert {"Math", "JSON", "Date", "Intl"} <= engine.global_names()
    assert not {"require", "process", "ErgonAnalysis"} & engine.global_names()


def test_checking_definitions_without_javascript_starts_no_sandbox() -> None:
    probe = (
        "import sys\nfrom compiler import check_workspace, load_workspace\n"
        "report = check_workspace(load_workspace(['definitions']))\n"
        "from compiler.js import engine\n"
        "print(report.ok, engine._worker.proc is None, 'py_mini_racer' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "False"]
