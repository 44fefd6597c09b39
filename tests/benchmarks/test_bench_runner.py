"""The benchmark runner end to end at the smallest size: checks, files, notes; no timing assertions."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks import peers, runner  # noqa: E402
from pyshark import cli  # noqa: E402


def _results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())


def test_smoke_checks_every_program(tmp_path, capsys):
    assert runner.main(["--smoke", "--peers", "numpy", "--out", str(tmp_path)]) == 0
    data = _results(tmp_path)
    rows = data["results"]
    assert {r["status"] for r in rows} == {"ok"}
    assert {r["program"] for r in rows} >= {"saxpy", "histogram", "max_histogram", "locvolcalib"}
    assert all("median" not in r for r in rows)          # --smoke times nothing
    assert (tmp_path / "results.md").is_file() and (tmp_path / "results.txt").is_file()
    assert "checked" in capsys.readouterr().out


def test_a_timed_run_writes_table_json_and_compile_report(tmp_path, capsys):
    status = runner.main(["--programs", "saxpy", "--sizes", "tiny", "--peers", "numpy",
                          "--backends", "python", "--repeats", "2", "--budget", "1",
                          "--no-chart", "--out", str(tmp_path)])
    assert status == 0
    data = _results(tmp_path)
    rows = {r["target"]: r for r in data["results"]}
    assert rows["numpy"]["ratio"] == pytest.approx(1.0)
    assert rows["ps.python"]["median"] > 0 and rows["ps.python"]["gbs"] > 0
    assert data["info"]["copy_gbs"]["best"] > 0 and data["info"]["peak_gflops"]["sgemm"] > 0
    compiled = {(c["target"], c["program"]): c for c in data["compile"]}
    assert compiled[("ps.python", "saxpy")]["cached_load_s"] > 0
    assert compiled[("ps.python", "overhead")]["call_s"] > 0
    out = capsys.readouterr().out
    assert "vs best peer" in out and "copy bandwidth" in out and "peak FLOP estimate" in out


def test_a_missing_peer_is_a_note_not_a_crash(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(peers.PEER_MODULES, "nopeer", "benchmarks.peers.no_such_module")
    status = runner.main(["--smoke", "--programs", "sum", "--peers", "numpy,nopeer",
                          "--backends", "python", "--out", str(tmp_path)])
    assert status == 0
    notes = _results(tmp_path)["info"]["notes"]
    assert any(n.startswith("peer nopeer: skipped") for n in notes)


def test_a_wrong_result_is_reported_and_fails_the_run(tmp_path, monkeypatch):
    from benchmarks.peers import numpy_peers
    monkeypatch.setattr(numpy_peers, "saxpy", lambda a, xs, ys: a * xs - ys)
    status = runner.main(["--smoke", "--programs", "saxpy", "--peers", "numpy",
                          "--backends", "python", "--out", str(tmp_path)])
    assert status == 1
    rows = {r["target"]: r for r in _results(tmp_path)["results"]}
    assert rows["ps.python"]["status"] == "mismatch"


def test_sizes_above_a_slow_backends_limit_are_skipped_with_a_note(tmp_path):
    status = runner.main(["--check-only", "--programs", "saxpy", "--sizes", "small",
                          "--peers", "numpy", "--backends", "python", "--no-compile-report",
                          "--out", str(tmp_path)])
    assert status == 0
    rows = {r["target"]: r for r in _results(tmp_path)["results"]}
    assert rows["ps.python"]["status"] == "skipped" and "size limit" in rows["ps.python"]["note"]
    assert rows["numpy"]["status"] == "ok"


def test_cli_bench_lists_and_rejects_unknown_names(capsys):
    assert cli.main(["bench", "--list"]) == 0
    assert "locvolcalib" in capsys.readouterr().out
    assert cli.main(["bench", "--programs", "no_such_program"]) == 2
    assert cli.main(["bench", "--backends", "no_such_backend"]) == 2


def test_settle_waits_for_a_spinning_thread_of_this_process_and_no_longer():
    """machine.settle returns once the process's other threads are quiet
    (a peer's spinning pool), and at once when they already are."""
    import threading
    import time

    from benchmarks import machine

    assert machine.settle(max_wait=1.0) < 0.5
    stop = time.perf_counter() + 0.3

    def spin():
        while time.perf_counter() < stop:
            pass
    t = threading.Thread(target=spin)
    t.start()
    try:
        waited = machine.settle(max_wait=3.0)
    finally:
        t.join()
    assert 0.2 <= waited < 2.5


def test_timings_count_the_calls_sleeps_and_the_report_flags_them():
    """measure() counts the voluntary context switches per call (a thread
    that blocked); the report flags timings with SLEEPS_FLAGGED or more."""
    import time

    from benchmarks import report, timing

    busy = timing.measure(lambda: sum(range(200)), 1e-5, repeats=2, min_sample=0.005)
    slept = timing.measure(lambda: time.sleep(0.0005), 6e-4, repeats=2, min_sample=0.005)
    assert busy.sleeps < 0.5
    assert slept.sleeps >= 1.0
    rows = [{"program": "p", "size": "s", "target": "t", "sleeps": 300.0, "median": 3e-3},
            {"program": "q", "size": "s", "target": "t", "sleeps": busy.sleeps,
             "median": busy.median},
            {"program": "r", "size": "s", "target": "t", "sleeps": 50.0, "median": 5.0}]
    (note,) = report._sleep_notes(rows)
    assert "1 timing(s)" in note and "p/s/t" in note and "q/s/t" not in note
    assert report._sleep_notes(rows[1:]) == []       # r: a long call's few wakeups


def _turns(monkeypatch, sequential: bool):
    """The calls _time_rows makes of three targets ("|": a settle before a
    turn), each call taking about 1 ms, 4 samples each; and the rows."""
    import time
    from types import SimpleNamespace

    from benchmarks import machine

    calls, final = [], []
    monkeypatch.setattr(machine, "settle", lambda: calls.append("|"))
    monkeypatch.setattr(runner.report, "add_rates", lambda rows, bench, size, ref: None)

    def target(name):
        def call():
            calls.append(name)
            time.sleep(0.001)
        return call
    ready = [({"target": n, "status": "ok", "note": "", "check_s": 0.0}, target(n), 1e-3)
             for n in ("ps.cpu", "numpy", "numba")]
    opts = SimpleNamespace(seed=2024, repeats=4, budget=20.0, sequential=sequential)
    progress = SimpleNamespace(set_postfix_str=lambda text: None)
    bench = SimpleNamespace(name="saxpy")
    runner._time_rows(ready, opts, runner.Clock(None, None), progress, final.append, bench,
                      "tiny", None)
    samples = {r["target"]: r for r in final}
    return calls, samples


def test_targets_take_turns_one_sample_each_in_a_shuffled_order(monkeypatch):
    calls, rows = _turns(monkeypatch, sequential=False)
    assert set(rows) == {"ps.cpu", "numpy", "numba"}
    for r in rows.values():
        assert len(r["samples"]) == 4 and r["median"] > 0.0009 and r["inner"] == 20
    turns = "".join(c if c == "|" else c[-1] for c in calls).split("|")[1:]
    assert len(turns) == 12                             # 4 rounds of 3 turns
    # a turn: one untimed call (waking the team), then one sample of about 20 ms
    assert all(len(set(t)) == 1 and len(t) == 21 for t in turns)
    rounds = [sorted(t[0] for t in turns[3 * k: 3 * k + 3]) for k in range(4)]
    assert all(r == ["a", "u", "y"] for r in rounds)    # each target once a round
    assert len({"".join(t[0] for t in turns[3 * k: 3 * k + 3]) for k in range(4)}) > 1
    again = "".join(c if c == "|" else c[-1] for c in _turns(monkeypatch, False)[0])
    assert [t[0] for t in again.split("|")[1:]] == [t[0] for t in turns]   # a fixed seed


def test_sequential_times_each_target_back_to_back(monkeypatch):
    calls, rows = _turns(monkeypatch, sequential=True)
    turns = "".join(c if c == "|" else c[-1] for c in calls).split("|")[1:]
    assert [t[0] for t in turns] == ["u", "y", "a"]     # ps.cpu, numpy, numba
    assert all(len(set(t)) == 1 and len(t) == 4 * 20 + 1 for t in turns)
    assert all(len(r["samples"]) == 4 for r in rows.values())


def test_warm_up_makes_a_second_call_whatever_the_first_cost():
    """The first call may be a JIT compile; the samples are planned with the
    last warm-up call's time, so a second one runs even past the budget."""
    from benchmarks.timing import first_calls
    calls = []
    _, first, last = first_calls(lambda: calls.append(1), 5, budget=0.0)
    assert len(calls) == 2 and first >= 0 and last >= 0
    calls.clear()
    first_calls(lambda: calls.append(1), 1, budget=None)
    assert len(calls) == 1
