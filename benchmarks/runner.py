"""`pyshark bench` / `python -m benchmarks`: every program on every backend and peer, checked, then timed.

For each program and size: the inputs are generated from a fixed seed; each
target (PyShark backend or peer) is compiled or loaded, warmed up, and its
output compared with the reference (the NumPy peer, else Python mode);
only then are the targets that agree timed. Results go to a table on
stdout, results.json, results.md and chart.png in the output folder.
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
from .suite import SIZES
from .targets import BackendTarget, PeerTarget, Skip, default_limits, host_value
from .timing import first_calls, measure

RESULTS_DIR = Path(__file__).resolve().parent / "results"
#: the target whose output every other one is compared with (else the first that runs)
REFERENCE = "numpy"


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pyshark bench", description="Runs the benchmark suite: every program on every "
        "available PyShark backend beside NumPy, Numba and CuPy; checks that the outputs agree, "
        "then times them.")
    p.add_argument("--programs", metavar="P,...", help="programs to run (default: all; "
                   "--list shows them)")
    p.add_argument("--sizes", metavar="S,...", help=f"sizes among {', '.join(SIZES)} "
                   f"(default: {','.join(suite.DEFAULT_SIZES)})")
    p.add_argument("--backends", metavar="B,...", help="PyShark backends (default: every "
                   "available one; 'none' for none)")
    p.add_argument("--peers", metavar="N,...", help="peers among numpy, numba, cupy (default: "
                   "every one that imports; 'none' for none)")
    p.add_argument("--opencl-device", metavar="SPEC", help="OpenCL device for the opencl "
                   "backend, as pyopencl's PYOPENCL_CTX (e.g. 0:1)")
    p.add_argument("--max-size", action="append", default=[], metavar="TARGET=SIZE",
                   help="largest size a target runs (default: python=tiny, core=tiny); "
                   "repeatable, e.g. --max-size core=small")
    p.add_argument("--repeats", type=int, default=5, help="timed samples per target "
                   "(default: 5)")
    p.add_argument("--warmup", type=int, default=1, help="untimed calls first (default: 1)")
    p.add_argument("--budget", type=float, default=20.0, metavar="SECONDS",
                   help="time budget per target and size; slow ones get fewer samples "
                   "(default: 20)")
    p.add_argument("--seed", type=int, default=2024, help="input seed (default: 2024)")
    p.add_argument("--check-only", action="store_true", help="check the outputs, time nothing")
    p.add_argument("--smoke", action="store_true", help="the CI smoke test: --check-only at "
                   "the smallest size, no compile report, no chart")
    p.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS",
                   help="wait up to this long for the machine to become idle, at the start "
                   "and again before timing each program and size (until a wait fails)")
    p.add_argument("--no-compile-report", action="store_true",
                   help="skip the compile-time and overhead report")
    p.add_argument("--no-chart", action="store_true", help="do not draw chart.png")
    p.add_argument("--out", metavar="DIR", help="output folder (default: "
                   "benchmarks/results/latest)")
    p.add_argument("--list", action="store_true", help="list programs, sizes, backends and "
                   "peers, then exit")
    return p


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


def compare(got, want, rtol: float, atol: float) -> str | None:
    """None when got matches want (integer widths may differ), else the message."""
    from pyshark.testing import assert_close

    def align(g, w):
        if isinstance(w, tuple):
            return tuple(align(a, b) for a, b in zip(g, w)) if isinstance(g, tuple) else g
        g, w = np.asarray(g), np.asarray(w)
        return g.astype(w.dtype) if g.dtype != w.dtype and g.dtype.kind == w.dtype.kind else g

    try:
        want = want if isinstance(want, tuple) else np.asarray(want)
        assert_close(align(got, want), want, rtol=rtol, atol=atol)
        return None
    except AssertionError as exc:
        return str(exc)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def run_case(bench, size, targets, opts, progress) -> list[dict]:
    """One program at one size on every target: check all, then time those that agree."""
    args = bench.make_inputs(size, opts.seed)
    rows = [{"program": bench.name, "size": size, "label": bench.label(size),
             "target": t.name, "kind": t.kind, "status": "ok", "note": ""} for t in targets]
    ready = []
    reference, ref_name = None, None
    # the NumPy peer is the reference when it runs, so it goes first
    order = sorted(zip(targets, rows), key=lambda tr: tr[0].name != REFERENCE)
    for target, row in order:
        progress.set_postfix_str(f"{bench.name}/{size} {target.name} (check)")
        if not target.allows(size):
            row.update(status="skipped", note=f"above {target.name}'s size limit "
                       f"({target.max_size}; --max-size {target.name.removeprefix('ps.')}=SIZE)")
            progress.update(1)
            continue
        try:
            call = target.prepare(bench, args)
            out, first, last = first_calls(call, opts.warmup)
            out = host_value(call, out)
        except Skip as exc:
            row.update(status="skipped", note=str(exc))
            progress.update(1)
            continue
        except Exception as exc:          # a failing target is a result, never a crash
            row.update(status="error", note=_first_line(exc))
            progress.update(1)
            continue
        row["first_call_s"] = first
        if isinstance(target, BackendTarget):
            row["compile_s"] = target.compile_seconds.get(bench.module)
        if reference is None:
            reference, ref_name = out, target.name
            if target.name != REFERENCE and REFERENCE in [t.name for t in targets]:
                row["note"] = f"reference ({REFERENCE} did not run)"
        else:
            problem = compare(out, reference, *bench.tolerance(size))
            if problem:
                row.update(status="mismatch", note=f"differs from {ref_name}: {problem}")
                progress.update(1)
                continue
        row["checked_against"] = ref_name
        ready.append((row, call, last))
    ready.sort(key=lambda x: rows.index(x[0]))
    if ready and opts.wait_idle and not opts.check_only:
        idle, text = machine.wait_until_idle(opts.wait_idle, say=progress.write)
        if not idle:        # the machine is shared for good: stop waiting, say so
            opts.wait_idle = 0.0
            progress.write(f"gave up waiting for an idle machine ({text}); timing anyway")
    for row, call, estimate in ready:
        if not opts.check_only:
            progress.set_postfix_str(f"{bench.name}/{size} {row['target']} (time)")
            timing = measure(call, estimate, repeats=opts.repeats, budget=opts.budget)
            measured = timing.as_dict()
            row["note"] = "; ".join(filter(None, [row["note"], measured.pop("note")]))
            row.update(measured)
        progress.update(1)
    report.add_rates(rows, bench, size, reference)
    return rows


class _Progress:
    """A tqdm bar on a terminal (when tqdm imports), else one line per program, size and target."""

    def __init__(self, total: int):
        self.bar = None
        if sys.stderr.isatty():
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, unit="run", file=sys.stderr, dynamic_ncols=True)
            except ImportError:
                pass

    def update(self, n):
        if self.bar is not None:
            self.bar.update(n)

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
    from .peers import PEER_MODULES, load_peer
    print("programs (sizes: " + ", ".join(SIZES) + "):")
    for b in suite.BENCHMARKS:
        print(f"  {b.name:14s} {b.about}")
        for s in SIZES:
            print(f"      {s:7s} {b.label(s)}")
    avail = registry.available_backends()
    print("backends: " + ", ".join(f"{n}{'' if n in avail else ' (not available)'}"
                                   f"{' [up to ' + limits[n] + ']' if n in limits else ''}"
                                   for n in registry.known_backends()))
    print("peers: " + ", ".join(f"{n}{'' if load_peer(n)[0] else ' (does not import)'}"
                                for n in PEER_MODULES))


def main(argv: list[str] | None = None) -> int:
    opts = make_parser().parse_args(argv)
    if opts.smoke:
        opts.check_only = opts.no_compile_report = opts.no_chart = True
        opts.sizes = opts.sizes or SIZES[0]
    try:
        limits = _size_limits(opts.max_size)
        benches = suite.select(_names(opts.programs))
        sizes = _names(opts.sizes) or list(suite.DEFAULT_SIZES)
        bad = [s for s in sizes if s not in SIZES]
        if bad:
            raise ValueError(f"unknown size(s) {', '.join(bad)}; sizes: {', '.join(SIZES)}")
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

    started = time.time()
    idle, idle_text = (machine.wait_until_idle(opts.wait_idle) if opts.wait_idle
                       else machine.idle_check())
    if not idle:
        opts.wait_idle = 0.0
        print(f"WARNING: the machine is not idle ({idle_text}); timings will be unreliable",
              file=sys.stderr)
    info = {"machine": machine.describe(), "idle_at_start": {"idle": idle, "text": idle_text},
            "command": "pyshark bench " + " ".join(sys.argv[1:] if argv is None else argv),
            "started": time.strftime("%Y-%m-%d %H:%M:%S"), "seed": opts.seed,
            "sizes": sizes, "targets": [t.name for t in targets], "notes": notes}
    if not opts.check_only:
        print("measuring the machine (copy bandwidth, float32 GEMM) ...", file=sys.stderr)
        info["copy_gbs"] = machine.copy_bandwidth()
        info["peak_gflops"] = machine.peak_gflops()
        gpu = machine.gpu_copy_bandwidth() if any(t.name == "cupy" for t in targets) else None
        if gpu:
            info["gpu_copy_gbs"] = gpu

    cases = [(b, s) for b in benches for s in sizes]
    progress = _Progress(len(cases) * len(targets))
    rows = []
    for bench, size in cases:
        rows += run_case(bench, size, targets, opts, progress)
    progress.close()
    info["elapsed_s"] = time.time() - started
    report.add_ratios(rows, info.get("copy_gbs", {}).get("best"))

    compile_rows = []
    if not opts.no_compile_report:
        from .compile_report import compile_report
        backends = [t.backend for t in targets if isinstance(t, BackendTarget)]
        print("compile-time and overhead report ...", file=sys.stderr)
        compile_rows = compile_report(backends, benches, rows)

    out = Path(opts.out) if opts.out else RESULTS_DIR / "latest"
    out.mkdir(parents=True, exist_ok=True)
    info["check_only"] = opts.check_only
    (out / "results.json").write_text(json.dumps(
        {"info": info, "results": rows, "compile": compile_rows}, indent=1, default=float) + "\n")
    text = report.text_report(info, rows, compile_rows)
    print(text)
    (out / "results.txt").write_text(text + "\n")
    (out / "results.md").write_text(report.markdown_report(info, rows, compile_rows))
    if not opts.no_chart and not opts.check_only:
        why_not = report.chart(rows, out / "chart.png")
        print(f"chart: {why_not}" if why_not else f"chart: {out / 'chart.png'}")
    print(f"results: {out / 'results.json'}")
    failed = [r for r in rows if r["status"] in ("mismatch", "error")]
    return 1 if failed else 0
