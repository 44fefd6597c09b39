"""`pyshark bench` / `python -m benchmarks`: every program on every backend and peer, checked, then timed.

For each program and size: the inputs are generated from a fixed seed; each
target (PyShark backend or peer) is compiled or loaded, warmed up, and its
output compared with the reference (the NumPy peer, else the first of
REFERENCES that runs, else the first target that runs); only then are the
targets that agree timed. Each row goes to the output folder's rows.jsonl
as soon as it is final, and results.txt/.md/.json are rewritten after each
program and size, so a run killed by a time limit keeps every finished
row; `--resume` continues it, `--merge` joins several folders (runlog.py).
At the end: a table on stdout, results.json, results.md and chart.png.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from . import machine, report, suite
from .peers import PEER_MODULES
from .profiles import PROFILES
from .runlog import RunLog, merge_folders
from .suite import SIZES
from .targets import (BackendTarget, PeerTarget, Skip, Timeout, default_limits, host_value,
                      time_limit)
from .timing import Sampler, first_calls

_HERE = Path(__file__).resolve().parent
#: a checkout's benchmarks/results; for an installed copy (pyshark.benchmarks in
#: site-packages, `pyshark bench` outside a checkout) ./pyshark-bench-results
RESULTS_DIR = (_HERE / "results" if (_HERE.parent / "pyproject.toml").is_file()
               else Path.cwd() / "pyshark-bench-results")
#: the targets whose output every other one is compared with, the first that runs
#: (NumPy's; where a profile leaves NumPy out, Numba's, ...)
REFERENCES = ("numpy", "numba", "ps.cpu", "cupy")
REFERENCE = REFERENCES[0]


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pyshark bench", description="Runs the benchmark suite: every program on every "
        "available PyShark backend beside NumPy, Numba and CuPy; checks that the outputs agree, "
        "then times them. Each row is written to the output folder as soon as it is measured.")
    p.add_argument("--profile", choices=sorted(PROFILES), help="a named selection of programs, "
                   "sizes, targets and options (gpu: the GPU issue's sizes; --list shows it)")
    p.add_argument("--programs", metavar="P,...", help="programs to run (default: all, or the "
                   "profile's; --list shows them)")
    p.add_argument("--sizes", metavar="S,...", help=f"sizes among {', '.join(SIZES)} "
                   f"(default: {','.join(suite.DEFAULT_SIZES)}, or the profile's)")
    p.add_argument("--backends", metavar="B,...", help="PyShark backends (default: every "
                   "available one; 'none' for none)")
    p.add_argument("--peers", metavar="N,...", help="peers among " + ", ".join(PEER_MODULES)
                   + " (default: every one that imports; 'none' for none)")
    p.add_argument("--opencl-device", metavar="SPEC", help="OpenCL device for the opencl "
                   "backend, as pyopencl's PYOPENCL_CTX (e.g. 0:1)")
    p.add_argument("--max-size", action="append", default=[], metavar="TARGET=SIZE",
                   help="largest size a target runs (default: python=tiny, core=tiny, "
                   "opencl=tiny when its device is not a GPU); repeatable, e.g. "
                   "--max-size core=small")
    p.add_argument("--repeats", type=int, help="timed samples per target (default: 5)")
    p.add_argument("--warmup", type=int, help="untimed calls first (default: 2: the first "
                   "may be a JIT compile; the last one's time plans the samples)")
    p.add_argument("--budget", type=float, metavar="SECONDS",
                   help="time budget for the samples of one target and size; slow ones get "
                   "fewer samples (default: 20)")
    p.add_argument("--row-limit", type=float, metavar="SECONDS", dest="row_timeout",
                   help="hard limit on the time one target spends on one program and size "
                   "(its check and its timing); a call still running then is stopped and the "
                   "row says timeout (default: none; gpu profile: 90)")
    p.add_argument("--deadline", type=float, metavar="SECONDS",
                   help="stop this run after SECONDS (a running call is stopped, no new row "
                   "starts); every finished row is already written, and --resume runs the rest")
    p.add_argument("--resume", action="store_true", help="keep the rows already in the "
                   "output folder (rows.jsonl) and run only the others")
    p.add_argument("--merge", nargs="+", metavar="DIR", help="run nothing: merge the rows "
                   "of these output folders (a later one wins) into --out and write its "
                   "tables and chart")
    p.add_argument("--compile-report-only", action="store_true", help="run no program: only "
                   "the compile-time and overhead report")
    p.add_argument("--seed", type=int, default=2024, help="input seed (default: 2024)")
    p.add_argument("--check-only", action="store_true", help="check the outputs, time nothing")
    p.add_argument("--smoke", action="store_true", help="the CI smoke test: --check-only at "
                   "the smallest size, no compile report, no chart")
    p.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS",
                   help="wait up to this long for the machine to become idle, at the start "
                   "and again before timing each program and size (until a wait fails)")
    p.add_argument("--sequential", action="store_true", help="time each target's samples "
                   "back to back (default: the targets of a program and size take turns, one "
                   "sample each, in a shuffled order per round)")
    p.add_argument("--no-compile-report", action="store_true",
                   help="skip the compile-time and overhead report")
    p.add_argument("--no-chart", action="store_true", help="do not draw chart.png")
    p.add_argument("--out", metavar="DIR", help="output folder (default: "
                   "benchmarks/results/latest)")
    p.add_argument("--list", action="store_true", help="list programs, sizes, profiles, "
                   "backends and peers, then exit")
    return p


#: option defaults where neither the command line nor the profile gives one
DEFAULTS = {"repeats": 5, "warmup": 2, "budget": 20.0, "row_timeout": None}


def _apply_profile(opts) -> None:
    profile = PROFILES.get(opts.profile) if opts.profile else None
    if profile is not None:
        for key, value in profile.options.items():
            if getattr(opts, key, None) in (None, False):
                setattr(opts, key, value)
        opts.backends = opts.backends or profile.backends
        opts.peers = opts.peers or profile.peers
    for key, value in DEFAULTS.items():
        if getattr(opts, key) is None:
            setattr(opts, key, value)


def select_cases(opts) -> list:
    """[(benchmark, size)] to run: the profile's cases (of the --programs named), or
    every selected program at every selected size."""
    programs = _names(opts.programs)
    profile = PROFILES.get(opts.profile) if opts.profile else None
    if profile is not None and not programs:
        programs = profile.programs()
    benches = suite.select(programs)
    sizes = _names(opts.sizes)
    bad = [s for s in sizes or [] if s not in SIZES]
    if bad:
        raise ValueError(f"unknown size(s) {', '.join(bad)}; sizes: {', '.join(SIZES)}")
    if profile is not None and not sizes:
        return [(suite.BY_NAME[p], s) for p, s in profile.cases if p in programs]
    return [(b, s) for b in benches for s in (sizes or suite.DEFAULT_SIZES) if s in b.sizes]


def _names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [] if text.strip() == "none" else [t.strip() for t in text.split(",") if t.strip()]


def _size_limits(specs: list[str]) -> dict:
    limits = default_limits()
    for spec in specs:
        name, _, size = spec.partition("=")
        if size not in SIZES:
            raise ValueError(f"--max-size {spec}: the size must be one of {', '.join(SIZES)}")
        limits[name.removeprefix("ps.")] = size
    return limits


def make_targets(backends, peers, limits, notes: list[str]) -> list:
    """The targets that can run here; a missing one becomes a note."""
    from pyshark.wrapper import registry
    from .peers import PEER_MODULES, load_peer
    targets = []
    known = registry.known_backends()
    for name in (registry.available_backends() if backends is None else backends):
        if name not in known:
            raise ValueError(f"unknown backend {name!r}; known: {', '.join(known)}")
        try:
            registry.get_backend(name)
        except ValueError as exc:
            notes.append(f"backend {name}: skipped ({exc})")
            continue
        targets.append(BackendTarget(name, limits.get(name)))
    if backends is None:
        for name in known:
            if name not in registry.available_backends():
                notes.append(f"backend {name}: not available here (not built yet or no device)")
    for name in (list(PEER_MODULES) if peers is None else peers):
        if name not in PEER_MODULES:
            raise ValueError(f"unknown peer {name!r}; known: {', '.join(PEER_MODULES)}")
        module, why = load_peer(name)
        if module is None:
            notes.append(f"peer {name}: skipped ({why})")
            continue
        targets.append(PeerTarget(name, module, limits.get(name)))
    return targets


#: arrays longer than this are compared a slice at a time (2^28 elements at once would take
#: tens of seconds and gigabytes of float64 temporaries)
COMPARE_CHUNK = 1 << 22


def compare(got, want, rtol: float, atol: float) -> str | None:
    """None when got matches want (integer widths may differ), else the message."""
    from pyshark.testing import assert_close

    def align(g, w):
        if isinstance(w, tuple):
            return tuple(align(a, b) for a, b in zip(g, w)) if isinstance(g, tuple) else g
        g, w = np.asarray(g), np.asarray(w)
        return g.astype(w.dtype) if g.dtype != w.dtype and g.dtype.kind == w.dtype.kind else g

    def check(g, w):
        if isinstance(w, tuple) and isinstance(g, tuple) and len(g) == len(w):
            for k, (a, b) in enumerate(zip(g, w)):
                try:
                    check(a, b)
                except AssertionError as exc:
                    raise AssertionError(f"[{k}] {exc}") from None
            return
        if (isinstance(g, np.ndarray) and isinstance(w, np.ndarray) and g.shape == w.shape
                and g.dtype == w.dtype and g.size > COMPARE_CHUNK and g.dtype.names is None):
            gf, wf = g.reshape(-1), w.reshape(-1)
            for lo in range(0, gf.size, COMPARE_CHUNK):
                gc, wc = gf[lo:lo + COMPARE_CHUNK], wf[lo:lo + COMPARE_CHUNK]
                if _plainly_close(gc, wc, rtol, atol):
                    continue
                try:
                    assert_close(gc, wc, rtol=rtol, atol=atol)
                except AssertionError as exc:
                    raise AssertionError(f"in the flat elements from {lo}: {exc}") from None
            return
        assert_close(g, w, rtol=rtol, atol=atol)

    try:
        want = want if isinstance(want, tuple) else np.asarray(want)
        check(align(got, want), want)
        return None
    except AssertionError as exc:
        return str(exc)


def _plainly_close(g, w, rtol, atol) -> bool:
    """A quick sufficient test, in the arrays' own dtype: equal integers, or finite floats
    within the tolerance (NaN, infinities and near misses go to assert_close)."""
    if g.dtype.kind in "biu":
        return bool(np.array_equal(g, w))
    if g.dtype.kind == "f":
        with np.errstate(all="ignore"):
            return bool(np.all(np.abs(g - w) <= atol + rtol * np.abs(w)))
    return False


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


class Clock:
    """The run's deadline: seconds left, and the limit for a row (the row limit or
    what is left before the deadline, the smaller)."""

    def __init__(self, deadline: float | None, row_limit: float | None):
        self.end = time.monotonic() + deadline if deadline else None
        self.row_limit = row_limit

    def left(self) -> float | None:
        return None if self.end is None else self.end - time.monotonic()

    def expired(self) -> bool:
        return self.end is not None and self.left() <= 0

    def limit(self, spent: float = 0.0) -> tuple[float | None, bool]:
        """(seconds this row may still take, whether the deadline is what limits it)."""
        row = None if self.row_limit is None else self.row_limit - spent
        left = self.left()
        if left is not None and (row is None or left < row):
            return max(left, 0.001), True
        return (None if row is None else max(row, 0.001)), False


class DeadlineReached(Exception):
    """The run's deadline passed: stop, keeping what is written."""


def _reference_rank(target) -> int:
    return REFERENCES.index(target.name) if target.name in REFERENCES else len(REFERENCES)


def run_case(bench, size, targets, opts, progress, *, previous=None, emit=None,
             clock=None, leave_out=None) -> list[dict]:
    """One program at one size on every target: check all, then time those that agree.

    `previous` holds the rows of a resumed run (key -> row): those targets do
    not run again, except the reference, called once untimed when others
    need its output. Each row goes to `emit` as soon as it is final. Raises
    DeadlineReached when the clock's deadline stops a row (that row is not
    emitted: a resumed run does it again)."""
    previous = previous or {}
    emit = emit or (lambda row: None)
    clock = clock or Clock(None, getattr(opts, "row_timeout", None))
    leave_out = leave_out or {}
    todo = {t.name for t in targets if (bench.name, size, t.name) not in previous}
    if not todo:
        return []
    args = bench.make_inputs(size, opts.seed)
    rows = {t.name: {"program": bench.name, "size": size, "label": bench.label(size),
                     "target": t.name, "kind": t.kind, "device": t.device, "status": "ok",
                     "note": t.note} for t in targets if t.name in todo}
    ready = []
    reference, ref_name = None, None

    def final(row):
        row["finished_at"] = time.strftime("%Y-%m-%d %H:%M:%S")
        emit(row)
        progress.row(row)

    def needed_as_reference(target) -> bool:
        old = previous.get((bench.name, size, target.name))
        return (reference is None and old is not None and old["status"] == "ok"
                and any(rows[n]["status"] == "ok" and "checked_against" not in rows[n]
                        for n in rows))

    for target in sorted(targets, key=_reference_rank):
        row = rows.get(target.name)
        if row is None and not needed_as_reference(target):
            continue
        progress.set_postfix_str(f"{bench.name}/{size} {target.name} (check)")
        if row is not None and not target.allows(size):
            row.update(status="skipped", note=f"above {target.name}'s size limit "
                       f"({target.max_size}; --max-size {target.name.removeprefix('ps.')}=SIZE)")
            final(row)
            continue
        if row is not None and target.name in leave_out:
            row.update(status="skipped", note=leave_out[target.name])
            final(row)
            continue
        t0 = time.perf_counter()
        limit, by_deadline = clock.limit()
        try:
            with time_limit(clock.left()):
                call = target.prepare(bench, args)          # compile or load, upload
            if row is not None and target.note and target.note not in row["note"]:
                row["note"] = _join(row["note"], target.note)
            with time_limit(limit):
                out, first, last = first_calls(call, opts.warmup, opts.budget)
            out = host_value(call, out)
        except Skip as exc:
            if row is not None:
                row.update(status="skipped", note=str(exc))
                final(row)
            continue
        except Timeout:
            if by_deadline or clock.expired():
                raise DeadlineReached() from None
            if row is not None:
                row.update(status="timeout", note=f"a call ran past the row limit "
                           f"({clock.row_limit:g} s; --row-limit)")
                final(row)
            continue
        except Exception as exc:          # a failing target is a result, never a crash
            if row is not None:
                row.update(status="error", note=_join(row["note"], _first_line(exc)))
                final(row)
            continue
        if row is None:                   # the reference of a resumed case: output only
            reference, ref_name = out, target.name
            continue
        row["first_call_s"] = first
        row["check_s"] = time.perf_counter() - t0
        if isinstance(target, BackendTarget):
            row["compile_s"] = target.compile_seconds.get(bench.module)
        if reference is None:
            reference, ref_name = out, target.name
            if target.name != REFERENCE and REFERENCE in [t.name for t in targets]:
                row["note"] = _join(row["note"], f"reference ({REFERENCE} did not run)")
        else:
            problem = compare(out, reference, *bench.tolerance(size))
            if problem:
                row.update(status="mismatch", note=f"differs from {ref_name}: {problem}")
                final(row)
                continue
        row["checked_against"] = ref_name
        if opts.check_only:
            report.add_rates([row], bench, size, reference)
            final(row)
        else:
            ready.append((row, call, last))
        del out
    order = [t.name for t in targets]
    ready.sort(key=lambda x: order.index(x[0]["target"]))
    if ready and opts.wait_idle:
        idle, text = machine.wait_until_idle(opts.wait_idle, say=progress.write)
        if not idle:        # the machine is shared for good: stop waiting, say so
            opts.wait_idle = 0.0
            progress.write(f"gave up waiting for an idle machine ({text}); timing anyway")
    _time_rows(ready, opts, clock, progress, final, bench, size, reference)
    return list(rows.values())


def _time_rows(ready, opts, clock, progress, final, bench, size, reference) -> None:
    """Times the checked targets of one program and size. By default they take
    turns, one sample each in a shuffled order per round, so that a slow
    stretch of a shared machine (a neighbour's burst, a memory-bandwidth
    regime) falls on every target alike rather than on one (timing.Sampler;
    randomized multiple interleaved trials). `--sequential`: each target's
    samples back to back, as before. Each turn starts after machine.settle(),
    so no target is timed in another's wake, and (calls under
    timing.WARM_BELOW) with one untimed call that wakes the thread team
    settle let sleep (timing.Sampler)."""
    import random
    todo = []
    for row, call, estimate in ready:
        limit, by_deadline = clock.limit(row["check_s"])
        if limit is not None and limit < estimate:
            if by_deadline:
                raise DeadlineReached()
            row.update(status="timeout", note=_join(row["note"], f"checked; one call "
                       f"({report.fmt_time(estimate)}) does not fit in what the row limit "
                       f"({clock.row_limit:g} s) leaves"))
            final(row)
            continue
        budget = opts.budget if limit is None else min(opts.budget, limit)
        sampler = Sampler(call, estimate, repeats=opts.repeats, budget=budget)
        todo.append((row, sampler, limit, by_deadline))
    rng = random.Random(f"{opts.seed}/{bench.name}/{size}")
    sequential = getattr(opts, "sequential", False)
    active = list(todo)
    while active:
        turn = list(active)
        if not sequential:
            rng.shuffle(turn)
        for item in (turn[:1] if sequential else turn):
            row, sampler, limit, by_deadline = item
            progress.set_postfix_str(f"{bench.name}/{size} {row['target']} (time)")
            machine.settle()            # no other target's threads still spinning
            try:
                warm = sampler.wants_warm_call() and not (sequential and sampler.timing.samples)
                while True:
                    with time_limit(None if limit is None else max(limit - sampler.spent, 0.001)):
                        sampler.sample(warm=warm)
                    warm = False
                    if not (sequential and sampler.wants()):
                        break
            except Timeout:
                if by_deadline or clock.expired():
                    raise DeadlineReached() from None
                if not sampler.timing.samples:
                    row.update(status="timeout", note=_join(row["note"], "checked; no timed "
                               f"call finished within the row limit ({clock.row_limit:g} s)"))
                    active.remove(item)
                    final(row)
                    continue
                sampler.cut_short(limit)
            if not sampler.wants():
                active.remove(item)
    for row, sampler, _, _ in todo:
        if row["status"] != "ok":
            continue
        measured = sampler.finish().as_dict()
        row["note"] = _join(row["note"], measured.pop("note"))
        row.update(measured)
        report.add_rates([row], bench, size, reference)
        final(row)


def _join(*parts) -> str:
    return "; ".join(p for p in parts if p)


class _Progress:
    """A tqdm bar on a terminal (when tqdm imports), else one line per check and per row."""

    def __init__(self, total: int):
        self.bar = None
        if sys.stderr.isatty():
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, unit="run", file=sys.stderr, dynamic_ncols=True)
            except ImportError:
                pass

    def row(self, row):
        if self.bar is not None:
            self.bar.update(1)
            return
        what = (report.fmt_time(row["median"]) if row.get("median") is not None
                else row["status"])
        note = f" ({row['note']})" if row["note"] and row["status"] != "ok" else ""
        print(f"    {row['program']}/{row['size']} {row['target']}: {what}{note}",
              file=sys.stderr, flush=True)

    def set_postfix_str(self, text):
        if self.bar is not None:
            self.bar.set_postfix_str(text)
        elif text.endswith("(check)"):
            print(f"  {text}", file=sys.stderr, flush=True)

    def write(self, text):
        (self.bar.write if self.bar is not None else print)(text)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def list_everything(limits) -> None:
    from pyshark.wrapper import registry
    from .peers import load_peer
    print("programs (sizes: " + ", ".join(SIZES) + "):")
    for b in suite.BENCHMARKS:
        print(f"  {b.name:14s} {b.about}")
        for s in SIZES:
            if s in b.sizes:
                print(f"      {s:7s} {b.label(s)}")
    for prof in PROFILES.values():
        print(f"profile {prof.name}: {prof.about}")
        print("  cases: " + ", ".join(f"{p}/{s}" for p, s in prof.cases))
        print(f"  backends {prof.backends}; peers {prof.peers}; "
              + ", ".join(f"{k}={v}" for k, v in prof.options.items()))
    avail = registry.available_backends()
    print("backends: " + ", ".join(f"{n}{'' if n in avail else ' (not available)'}"
                                   f"{' [up to ' + limits[n] + ']' if n in limits else ''}"
                                   for n in registry.known_backends()))
    print("peers: " + ", ".join(f"{n}{'' if load_peer(n)[0] else ' (does not import)'}"
                                for n in PEER_MODULES))


def write_outputs(out: Path, info: dict, rows: list, compile_rows: list, *,
                  chart: bool = False, quiet: bool = True) -> str:
    """results.json, results.txt and results.md (and chart.png) from every row so far."""
    from .compile_report import numba_first_calls
    rows = report.sort_rows(rows)
    report.add_ratios(rows, info.get("copy_gbs", {}).get("best"),
                      (info.get("gpu_copy_gbs") or {}).get("cupy_copy"))
    compile_all = ([c for c in compile_rows if c["target"].startswith("ps.")]
                   + numba_first_calls(rows)
                   + [c for c in compile_rows if not c["target"].startswith("ps.")]
                   if compile_rows else [])
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(
        {"info": info, "results": rows, "compile": compile_all}, indent=1, default=float) + "\n")
    text = report.text_report(info, rows, compile_all)
    (out / "results.txt").write_text(text + "\n")
    (out / "results.md").write_text(report.markdown_report(info, rows, compile_all))
    if chart:
        why_not = report.chart(rows, out / "chart.png")
        text += "\n" + (f"chart: {why_not}" if why_not else f"chart: {out / 'chart.png'}")
    return text


def _status(rows) -> int:
    return 1 if any(r["status"] in ("mismatch", "error") for r in rows) else 0


def merge_main(opts) -> int:
    try:
        info, rows, compile_rows = merge_folders([Path(d) for d in opts.merge])
    except (OSError, ValueError) as exc:
        print(f"pyshark bench --merge: {exc}", file=sys.stderr)
        return 2
    out = Path(opts.out) if opts.out else RESULTS_DIR / "latest"
    print(write_outputs(out, info, rows, compile_rows, chart=not opts.no_chart))
    print(f"results: {out / 'results.json'} ({len(rows)} rows from {len(opts.merge)} folders)")
    return _status(rows)


def main(argv: list[str] | None = None) -> int:
    opts = make_parser().parse_args(argv)
    if opts.merge:
        return merge_main(opts)
    if opts.smoke:
        opts.check_only = opts.no_compile_report = opts.no_chart = True
        opts.sizes = opts.sizes or SIZES[0]
    _apply_profile(opts)
    try:
        limits = _size_limits(opts.max_size)
        cases = [] if opts.compile_report_only else select_cases(opts)
        names = list(dict.fromkeys(b.name for b, _ in cases))
        benches = suite.select(names or _names(opts.programs))
        if opts.list:
            list_everything(limits)
            return 0
        if opts.opencl_device:
            os.environ["PYOPENCL_CTX"] = opts.opencl_device
        notes: list[str] = []
        targets = make_targets(_names(opts.backends), _names(opts.peers), limits, notes)
    except (KeyError, ValueError) as exc:
        print(f"pyshark bench: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    if not targets:
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        print("pyshark bench: nothing to run on (no backend and no peer)", file=sys.stderr)
        return 2

    out = Path(opts.out) if opts.out else RESULTS_DIR / "latest"
    log = RunLog(out, resume=opts.resume)
    clock = Clock(opts.deadline, opts.row_timeout)
    started = time.time()
    idle, idle_text = (machine.wait_until_idle(opts.wait_idle) if opts.wait_idle
                       else machine.idle_check())
    if not idle:
        opts.wait_idle = 0.0
        print(f"WARNING: the machine is not idle ({idle_text}); timings will be unreliable",
              file=sys.stderr)
    sizes = list(dict.fromkeys(s for _, s in cases))
    info = {"machine": machine.describe(), "idle_at_start": {"idle": idle, "text": idle_text},
            "command": "pyshark bench " + " ".join(sys.argv[1:] if argv is None else argv),
            "started": time.strftime("%Y-%m-%d %H:%M:%S"), "seed": opts.seed,
            "sizes": sizes, "targets": [t.name for t in targets], "notes": notes,
            "check_only": opts.check_only}
    notes += [f"{t.name}: {t.note}" for t in targets if t.note]
    earlier = log.all()[0] if log.runs else {}
    if not opts.check_only and not opts.compile_report_only:
        if "copy_gbs" in earlier:            # a resumed run measured the machine already
            for key in ("copy_gbs", "peak_gflops", "gpu_copy_gbs"):
                if key in earlier:
                    info[key] = earlier[key]
        else:
            print("measuring the machine (copy bandwidth, float32 GEMM) ...", file=sys.stderr)
            info["copy_gbs"] = machine.copy_bandwidth()
            info["peak_gflops"] = machine.peak_gflops()
            gpu = (machine.gpu_copy_bandwidth() if any(t.device == "gpu" for t in targets)
                   else None)
            if gpu:
                info["gpu_copy_gbs"] = gpu
    log.start(info)

    previous = dict(log.rows)
    done = log.done(opts.check_only)
    previous = {k: v for k, v in previous.items() if k in done}
    profile = PROFILES.get(opts.profile) if opts.profile else None
    progress = _Progress(len(cases) * len(targets))
    stopped = None
    for bench, size in cases:
        if clock.expired():
            stopped = f"{bench.name}/{size}"
            break
        leave_out = profile.leave_out.get((bench.name, size), {}) if profile else {}
        try:
            run_case(bench, size, targets, opts, progress, previous=previous, emit=log.row,
                     clock=clock, leave_out=leave_out)
        except DeadlineReached:
            stopped = f"{bench.name}/{size}"
            break
        finally:
            write_outputs(out, *log.all())
    progress.close()
    if stopped:
        left = [f"{b.name}/{s}" for b, s in cases[[f"{b.name}/{s}" for b, s in cases]
                                                  .index(stopped):]]
        msg = (f"deadline ({opts.deadline:g} s) reached: not finished: {', '.join(left)} "
               f"(--resume runs the rest)")
        print(msg, file=sys.stderr)

    if opts.compile_report_only or (not opts.no_compile_report and not stopped):
        from .compile_report import compile_report
        backends = [t.backend for t in targets if isinstance(t, BackendTarget)]
        print("compile-time and overhead report ...", file=sys.stderr)
        for c in compile_report(backends, benches):
            log.compile_row(c)
    log.end()
    info_all, rows, compile_rows = log.all()
    if stopped:
        info_all["notes"] = info_all["notes"] + [msg]
    text = write_outputs(out, info_all, rows, compile_rows,
                         chart=not opts.no_chart and not opts.check_only)
    print(text)
    print(f"results: {out / 'results.json'}")
    return _status(rows)
