"""The runner's robustness: rows written as they finish, --resume, --merge, --deadline,
--row-limit, the GPU profile, GPU peers that cannot run here, device-resident arrays, and
no tqdm or matplotlib. Correctness of the machinery only; no timing assertions."""
from __future__ import annotations

import json
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks import report, runlog, runner, suite, targets  # noqa: E402
from benchmarks.peers import numpy_peers  # noqa: E402

FAST = ["--sizes", "tiny", "--backends", "none", "--peers", "numpy", "--no-compile-report",
        "--no-chart"]


@pytest.fixture(autouse=True)
def quick_machine(monkeypatch):
    """No 1-second idle check and no bandwidth measurement: these tests time nothing real."""
    from benchmarks import machine
    monkeypatch.setattr(machine, "idle_check", lambda *a, **k: (True, "not checked (test)"))
    monkeypatch.setattr(machine, "copy_bandwidth", lambda *a, **k: {"numpy_copy": 10.0,
                                                                    "best": 10.0})
    monkeypatch.setattr(machine, "peak_gflops", lambda *a, **k: {"sgemm": 100.0, "n": 0})


def _rows(out: Path) -> dict:
    return {(r["program"], r["target"]): r
            for r in json.loads((out / "results.json").read_text())["results"]}


def _logged(out: Path) -> list:
    return [json.loads(line) for line in (out / runlog.LOG).read_text().splitlines()]


class Killed(BaseException):
    """Stands for the process being killed in the middle of a row."""


def test_rows_are_written_as_they_finish_and_resume_runs_only_the_rest(tmp_path, monkeypatch):
    def killed(xs, ys):
        raise Killed()

    real = numpy_peers.dot
    monkeypatch.setattr(numpy_peers, "dot", killed)
    args = ["--programs", "saxpy,sum,dot", "--repeats", "1", "--budget", "0.05", *FAST,
            "--out", str(tmp_path)]
    with pytest.raises(Killed):
        runner.main(args)
    logged = _logged(tmp_path)
    assert [r["program"] for r in logged if r["record"] == "row"] == ["saxpy", "sum"]
    assert all(r["median"] > 0 for r in logged if r["record"] == "row")
    assert "saxpy" in (tmp_path / "results.txt").read_text()     # the table so far
    assert set(_rows(tmp_path)) == {("saxpy", "numpy"), ("sum", "numpy")}

    monkeypatch.setattr(numpy_peers, "dot", real)
    assert runner.main(args + ["--resume"]) == 0
    logged = _logged(tmp_path)
    assert [r["program"] for r in logged if r["record"] == "row"] == ["saxpy", "sum", "dot"]
    assert [r["record"] for r in logged].count("run") == 2
    info = json.loads((tmp_path / "results.json").read_text())["info"]
    assert info["runs"] == 2 and len(info["command"]) == 2
    assert set(_rows(tmp_path)) == {("saxpy", "numpy"), ("sum", "numpy"), ("dot", "numpy")}


def test_a_resumed_case_calls_the_reference_again_for_the_others(tmp_path, monkeypatch):
    base = ["--check-only", "--programs", "saxpy", "--sizes", "tiny", "--no-compile-report",
            "--out", str(tmp_path)]
    assert runner.main(base + ["--backends", "none", "--peers", "numpy"]) == 0
    calls = []
    real = numpy_peers.saxpy
    monkeypatch.setattr(numpy_peers, "saxpy", lambda *a: calls.append(1) or real(*a))
    assert runner.main(base + ["--backends", "python", "--peers", "numpy", "--resume"]) == 0
    rows = _rows(tmp_path)
    assert calls and rows[("saxpy", "ps.python")]["checked_against"] == "numpy"
    assert sum(r.get("record") == "row" and r["target"] == "numpy"
               for r in _logged(tmp_path)) == 1


def test_the_deadline_stops_the_run_and_resume_finishes_it(tmp_path, monkeypatch, capsys):
    def slow_sum(xs):
        time.sleep(5)
        return xs.sum()

    real = numpy_peers.sum_f32
    monkeypatch.setattr(numpy_peers, "sum_f32", slow_sum)
    args = ["--check-only", "--programs", "saxpy,sum", *FAST, "--out", str(tmp_path)]
    t0 = time.monotonic()
    assert runner.main(args + ["--deadline", "1.5"]) == 0
    assert time.monotonic() - t0 < 4.0                      # the 5 s call was stopped
    assert "deadline (1.5 s) reached" in capsys.readouterr().err
    assert set(_rows(tmp_path)) == {("saxpy", "numpy")}       # sum's row is not written
    monkeypatch.setattr(numpy_peers, "sum_f32", real)
    assert runner.main(args + ["--resume"]) == 0
    assert set(_rows(tmp_path)) == {("saxpy", "numpy"), ("sum", "numpy")}


def test_a_row_over_its_limit_is_a_timeout_and_the_next_reference_takes_over(tmp_path,
                                                                              monkeypatch):
    def slow_saxpy(a, xs, ys):
        time.sleep(3)
        return a * xs + ys

    monkeypatch.setattr(numpy_peers, "saxpy", slow_saxpy)
    status = runner.main(["--check-only", "--programs", "saxpy", "--sizes", "tiny",
                          "--backends", "python", "--peers", "numpy", "--row-limit", "0.5",
                          "--no-compile-report", "--out", str(tmp_path)])
    assert status == 0                                       # too slow is not wrong
    rows = _rows(tmp_path)
    assert rows[("saxpy", "numpy")]["status"] == "timeout"
    assert "row limit" in rows[("saxpy", "numpy")]["note"]
    assert rows[("saxpy", "ps.python")]["status"] == "ok"
    assert "reference (numpy did not run)" in rows[("saxpy", "ps.python")]["note"]


def test_merge_joins_folders_later_rows_win_and_old_folders_read(tmp_path):
    a, b, merged = tmp_path / "a", tmp_path / "b", tmp_path / "merged"
    base = ["--check-only", *FAST]
    assert runner.main(base + ["--programs", "saxpy,sum", "--out", str(a)]) == 0
    assert runner.main(base + ["--programs", "sum,dot", "--out", str(b)]) == 0
    old = tmp_path / "old"                                   # a folder from before rows.jsonl
    old.mkdir()
    (old / "results.json").write_text((a / "results.json").read_text())
    assert runner.main(["--merge", str(old), str(b), "--out", str(merged), "--no-chart"]) == 0
    rows = _rows(merged)
    assert set(rows) == {("saxpy", "numpy"), ("sum", "numpy"), ("dot", "numpy")}
    b_sum = next(r for r in _logged(b) if r.get("program") == "sum")
    assert rows[("sum", "numpy")]["finished_at"] == b_sum["finished_at"]
    assert "| saxpy |" in (merged / "results.md").read_text()
    assert runner.main(["--merge", str(tmp_path / "nothing"), "--out", str(merged)]) == 2


def test_a_torn_last_line_is_ignored(tmp_path):
    assert runner.main(["--check-only", "--programs", "saxpy", *FAST, "--out", str(tmp_path)]) == 0
    with open(tmp_path / runlog.LOG, "a") as f:
        f.write('{"record": "row", "program": "su')           # killed in the middle of a write
    _, rows, _ = runlog.read_log(tmp_path / runlog.LOG)
    assert [r["program"] for r in rows] == ["saxpy"]


def test_the_gpu_profile_selects_the_gpu_issues_sizes():
    opts = runner.make_parser().parse_args(["--profile", "gpu"])
    runner._apply_profile(opts)
    cases = {(b.name, s): b.sizes[s] for b, s in runner.select_cases(opts)}
    assert cases[("saxpy", "large")] == {"n": 2**28} and cases[("sum", "large")] == {"n": 2**28}
    assert {("prefix_sum", "large"), ("histogram", "large"), ("filter", "large"),
            ("locvolcalib", "small"), ("locvolcalib", "medium")} <= set(cases)
    assert cases[("nbody", "large")] == {"n": 65536}
    # matmul at 1024, 2048 and 4096, f32 and f64 (issue 18)
    assert [cases[(name, size)]["n"] for name, size in
            [("matmul", "medium"), ("matmul_2048", "large"), ("matmul", "large"),
             ("matmul_f64", "medium"), ("matmul_f64_2048", "large"), ("matmul_f64", "large")]] \
        == [1024, 2048, 4096] * 2
    assert opts.backends == "opencl,cpu" and opts.peers == "cupy,cuda,numpy,numba"
    assert opts.row_timeout and opts.no_compile_report
    opts = runner.make_parser().parse_args(["--profile", "gpu", "--sizes", "tiny",
                                            "--programs", "nbody", "--budget", "1"])
    runner._apply_profile(opts)
    assert [(b.name, s) for b, s in runner.select_cases(opts)] == [("nbody", "tiny")]
    assert opts.budget == 1.0                                # the command line wins


def test_a_size_a_benchmark_lacks_is_not_run():
    """matmul_2048 has only tiny and large: the default sizes run it at tiny."""
    opts = runner.make_parser().parse_args(["--programs", "matmul_2048,matmul_f64"])
    assert [(b.name, s) for b, s in runner.select_cases(opts)] == [
        ("matmul_2048", "tiny"), ("matmul_f64", "tiny"), ("matmul_f64", "small"),
        ("matmul_f64", "medium")]


def test_the_gpu_profile_runs_here_without_a_gpu(tmp_path):
    """At tiny, on this machine's backends: the GPU peers are notes, numba is the n-body
    reference where the profile leaves NumPy out."""
    status = runner.main(["--profile", "gpu", "--programs", "saxpy", "--sizes", "tiny",
                          "--backends", "cpu", "--check-only", "--out", str(tmp_path)])
    assert status == 0
    notes = json.loads((tmp_path / "results.json").read_text())["info"]["notes"]
    if "cupy" not in sys.modules:
        assert any(n.startswith("peer cupy: skipped") for n in notes)
        assert any(n.startswith("peer cuda: skipped") for n in notes)


def test_cupy_that_does_not_import_or_finds_no_gpu_is_a_note(tmp_path, monkeypatch):
    if "cupy" in sys.modules or _imports("cupy"):
        pytest.skip("CuPy is installed here: its peers run (and are checked) instead")
    args = ["--smoke", "--programs", "saxpy,nbody", "--backends", "none", "--peers",
            "numpy,cupy,cuda", "--out", str(tmp_path)]
    assert runner.main(args) == 0
    notes = json.loads((tmp_path / "results.json").read_text())["info"]["notes"]
    assert any(n.startswith("peer cupy: skipped (cupy does not import") for n in notes)
    assert any(n.startswith("peer cuda: skipped (cuda does not import") for n in notes)

    def no_gpu():
        raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")

    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=no_gpu))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setitem(sys.modules, "cupyx", types.ModuleType("cupyx"))
    for name in ("benchmarks.peers.cupy_peers", "benchmarks.peers.cuda_peers"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert runner.main(args) == 0
    notes = json.loads((tmp_path / "results.json").read_text())["info"]["notes"]
    assert any(n.startswith("peer cupy: skipped (cupy cannot run here (RuntimeError")
               for n in notes)


def _imports(name: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(name) is not None


@pytest.mark.skipif(not _imports("cupy"), reason="CuPy is not installed here")
@pytest.mark.parametrize("peer", ["cupy", "cuda"])
def test_gpu_peers_agree_with_numpy(peer):
    """Every CuPy and CUDA peer against the NumPy peer at the small size (on a GPU machine)."""
    from benchmarks.peers import load_peer
    module, why = load_peer(peer)
    if module is None:
        pytest.skip(why)
    problems = []
    for bench in suite.BENCHMARKS:
        if not hasattr(module, bench.entry):
            continue
        call = targets.PeerTarget(peer, module).prepare(bench, bench.make_inputs("small", 2024))
        got = targets.host_value(call, call())
        want = getattr(numpy_peers, bench.entry)(*bench.make_inputs("small", 2024))
        problem = runner.compare(got, want, *bench.tolerance("small"))
        if problem:
            problems.append(f"{bench.name}: {problem}")
    assert not problems, "\n".join(problems)


def test_the_naive_cuda_nbody_kernel_computes_what_numpy_does(monkeypatch):
    """The CUDA source of the n-body peer, compiled as OpenCL C (PoCL here)."""
    cl = pytest.importorskip("pyopencl")
    from benchmarks.peers.cuda_sources import NBODY_SOURCE, OPENCL_PREAMBLE, THREADS
    try:
        ctx = cl.create_some_context(interactive=False)
    except Exception as exc:
        pytest.skip(f"no OpenCL device: {exc}")
    queue = cl.CommandQueue(ctx)
    kernel = cl.Kernel(cl.Program(ctx, OPENCL_PREAMBLE + NBODY_SOURCE).build(), "nbody_step")
    bench = suite.BY_NAME["nbody"]
    for n in (64, 1000):                                    # 1000: not a multiple of THREADS
        rng = np.random.default_rng(n)
        dt, eps, *arrays = suite._nbody_inputs(n, rng)
        mf = cl.mem_flags
        ins = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) for a in arrays]
        outs = [np.empty(n, np.float32) for _ in range(6)]
        bufs = [cl.Buffer(ctx, mf.WRITE_ONLY, o.nbytes) for o in outs]
        kernel(queue, ((n + THREADS - 1) // THREADS * THREADS,), (THREADS,), *ins, *bufs,
               np.float32(dt), np.float32(eps * eps), np.int32(n))
        for o, b in zip(outs, bufs):
            cl.enqueue_copy(queue, o, b)
        queue.finish()
        want = numpy_peers.nbody_step(dt, eps, *arrays)
        assert runner.compare(tuple(outs), want, *bench.tolerance("small")) is None


class FakeDeviceArray:
    """What Wrapper(device_arrays=True) returns, as far as the runner relies on it."""
    finished = 0

    def __init__(self, a):
        self.a = np.asarray(a)

    def get(self):
        return self.a.copy()

    def finish(self):
        FakeDeviceArray.finished += 1


def test_device_arrays_are_used_when_the_wrapper_takes_them(monkeypatch):
    import pyshark
    from pyshark import Wrapper

    class DeviceWrapper(Wrapper):
        def __init__(self, backend, device_arrays=False, **kw):
            super().__init__(backend, **kw)
            self.device_arrays = device_arrays
            self.host_inputs = 0

        def __getattr__(self, name):
            fn = super().__getattr__(name)

            def call(*args):
                self.host_inputs += sum(isinstance(a, np.ndarray) for a in args)
                args = [a.a if isinstance(a, FakeDeviceArray) else a for a in args]
                out = fn(*args)
                wrap = lambda v: FakeDeviceArray(v) if isinstance(v, np.ndarray) else v  # noqa
                return tuple(map(wrap, out)) if isinstance(out, tuple) else wrap(out)
            return call

    monkeypatch.setattr(pyshark, "Wrapper", DeviceWrapper)
    bench = suite.BY_NAME["nbody"]
    args = bench.make_inputs("tiny", 2024)
    target = targets.BackendTarget("python", device_arrays=True)
    call = target.prepare(bench, args)
    assert target.resident and target.note == ""
    w = target._wrappers[bench.module]
    before = FakeDeviceArray.finished
    out = call()
    assert FakeDeviceArray.finished - before == 6            # each result finished
    assert w.host_inputs == 0                                # the inputs were on the device
    got = targets.host_value(call, out)
    assert all(isinstance(g, np.ndarray) for g in got)
    assert runner.compare(got, numpy_peers.nbody_step(*args), *bench.tolerance("tiny")) is None

    monkeypatch.setattr(pyshark, "Wrapper", Wrapper)   # no device_arrays: host arrays
    target = targets.BackendTarget("python", device_arrays=True)
    call = target.prepare(bench, args)
    assert target.resident is False and "transfers included" in target.note
    assert runner.compare(targets.host_value(call, call()), numpy_peers.nbody_step(*args),
                          *bench.tolerance("tiny")) is None


def test_no_tqdm_and_no_matplotlib(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)           # import raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    progress = runner._Progress(3)
    assert progress.bar is None
    status = runner.main(["--programs", "saxpy", "--sizes", "tiny", "--backends", "none",
                          "--peers", "numpy", "--repeats", "1", "--budget", "0.05",
                          "--no-compile-report", "--out", str(tmp_path)])
    assert status == 0
    assert "chart: skipped (matplotlib does not import" in capsys.readouterr().out
    assert runner.main(["--merge", str(tmp_path), "--out", str(tmp_path / "m")]) == 0


def test_the_gpu_goals_table():
    info = {"gpu_copy_gbs": {"cupy_copy": 3000.0, "device": "H100"}}

    def row(program, size, target, median, **kw):
        return {"program": program, "size": size, "target": target, "median": median,
                "status": "ok", "kind": "peer" if not target.startswith("ps.") else "backend",
                "device": "gpu", **kw}

    rows = [row("saxpy", "large", "ps.opencl", 1.0, gbs=2800.0),
            row("saxpy", "large", "cupy", 2.0),
            row("prefix_sum", "large", "ps.opencl", 1.0), row("prefix_sum", "large", "cupy", 1.5),
            row("nbody", "large", "ps.opencl", 1.0), row("nbody", "large", "cuda", 1.5)]
    goals = {g[0]: g for g in report.gpu_goals(info, rows)}
    assert goals["saxpy"][4].startswith("met") and "93%" in goals["saxpy"][3]
    assert goals["prefix_sum"][4].startswith("NOT met")      # 1.5x, the goal is 2x
    assert goals["nbody"][4].startswith("met")
    assert goals["every program"][4] == "met"
    assert report.gpu_goals(info, [r for r in rows if r["kind"] == "backend"]) == []


def test_device_inputs_of_every_benchmark_dtype_and_a_fresh_note_per_row(monkeypatch):
    """The copy entries of programs/device_copy.py cover f32, i32, f64, i64
    and u8 in rank 1 and 2 (matmul_f64's f64 matrices were timed with their
    transfers); a row whose inputs could not go to the device says so, and
    the next row does not inherit that note."""
    from pyshark.wrapper import available_backends
    if "opencl" not in available_backends():
        pytest.skip("opencl unavailable")
    target = targets.BackendTarget("opencl")
    bench = suite.BY_NAME["matmul_f64"]
    args = bench.make_inputs("tiny", 7)
    w = target.wrapper(bench)
    for a in (np.arange(6.0).reshape(2, 3), np.arange(5, dtype=np.int64),
              np.arange(6, dtype=np.uint8).reshape(3, 2), np.arange(3, dtype=np.float64)):
        d = target.to_device(w, a)
        assert not isinstance(d, np.ndarray)
        np.testing.assert_array_equal(targets.device_to_host(d), a)

    def no_device(w, a):
        raise targets.Skip("no device copy entry (test)")
    monkeypatch.setattr(target, "to_device", no_device)
    target.prepare(bench, args)
    assert "transfers included" in target.note
    monkeypatch.undo()
    call = target.prepare(bench, args)
    assert target.note == ""
    np.testing.assert_allclose(targets.host_value(call, call()), args[0] @ args[1], rtol=1e-12)
