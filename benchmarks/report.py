"""Turning timed rows into numbers people compare: rates, ratios, tables, a chart.

A row is one program at one size on one target (see runner.run_case). The
ratio is the row's median time over the best peer's at the same program
and size (below 1: faster than every peer). GB/s counts the bytes the
program must move at least once; GFLOP/s the floating-point operations of
its usual count; % copy compares a streaming kernel's GB/s with the
machine's measured copy bandwidth.
"""
from __future__ import annotations

from collections import defaultdict

STATUS_TEXT = {"skipped": "skipped", "error": "ERROR", "mismatch": "MISMATCH",
               "timeout": "TIMEOUT"}


def _target_rank(name: str) -> tuple:
    """Backends first (in the registry's order), then peers (in PEER_MODULES' order)."""
    from .peers import PEER_MODULES
    try:
        from pyshark.wrapper import registry
        backends = ["ps." + b for b in registry.known_backends()]
    except Exception:
        backends = []
    if name in backends:
        return (0, backends.index(name), name)
    if name.startswith("ps."):
        return (0, len(backends), name)
    peers = list(PEER_MODULES)
    return (1, peers.index(name) if name in peers else len(peers), name)


def sort_rows(rows) -> list:
    """Rows in suite order: program, size (smallest first), target."""
    from .suite import BENCHMARKS, SIZES
    programs = [b.name for b in BENCHMARKS]

    def key(r):
        return (programs.index(r["program"]) if r["program"] in programs else len(programs),
                SIZES.index(r["size"]) if r["size"] in SIZES else len(SIZES),
                _target_rank(r["target"]))

    return sorted(rows, key=key)


def add_rates(rows, bench, size, reference) -> None:
    params = bench.sizes[size]
    for row in rows:
        row["streaming"] = bench.streaming
        t = row.get("median")
        if not t:
            continue
        if bench.nbytes:
            row["gbs"] = bench.nbytes(params) / t / 1e9
        if bench.flops and reference is not None:
            row["gflops"] = bench.flops(params, reference) / t / 1e9


def add_ratios(rows, copy_gbs: float | None, gpu_copy_gbs: float | None = None) -> None:
    """Ratio to the best peer; % copy against the copy bandwidth of the row's device
    (the host's, or the GPU's measured by CuPy for GPU targets)."""
    best = {}
    for r in rows:
        if r["kind"] == "peer" and r.get("median"):
            key = (r["program"], r["size"])
            if key not in best or r["median"] < best[key][0]:
                best[key] = (r["median"], r["target"])
    for r in rows:
        key = (r["program"], r["size"])
        if r.get("median") and key in best:
            r["ratio"] = r["median"] / best[key][0]
            r["best_peer"] = best[key][1]
        else:
            r.pop("ratio", None)
            r.pop("best_peer", None)
        bound = gpu_copy_gbs if r.get("device") == "gpu" else copy_gbs
        if bound and r.get("gbs") and r.get("streaming"):
            r["pct_copy"] = 100.0 * r["gbs"] / bound


def fmt_time(t: float | None) -> str:
    if t is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def fmt_ratio(r: float | None) -> str:
    if not r:
        return "-"
    return f"{r:,.0f}x" if r >= 100 else f"{r:.3g}x"


def _num(v, digits=3) -> str:
    return "-" if v is None else f"{v:.{digits}g}"


def _cells(r) -> list[str]:
    if r["status"] != "ok" or r.get("median") is None:
        status = STATUS_TEXT.get(r["status"], "checked" if r["status"] == "ok" else r["status"])
        return [status, "", "", "", "", ""]
    return [fmt_time(r["median"]), f"{100 * r['spread']:.0f}%", fmt_ratio(r.get("ratio")),
            _num(r.get("gbs")),
            _num(r.get("pct_copy"), 2), _num(r.get("gflops"))]


HEADER = ["program", "size", "target", "median", "spread", "vs best peer", "GB/s", "% copy",
          "GFLOP/s"]


def _table_rows(rows):
    out = []
    for r in rows:
        out.append([r["program"], f"{r['size']} ({r['label']})", r["target"], *_cells(r)])
    return out


def _machine_lines(info) -> list[str]:
    m = info["machine"]
    v = m["versions"]
    lines = [f"machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib'] or 0:.0f} GiB; "
             + ", ".join(f"{k} {v[k]}" for k in v)]
    if "copy_gbs" in info:
        c = info["copy_gbs"]
        lines.append("copy bandwidth: " + ", ".join(f"{k.replace('_', ' ')} {c[k]:.1f} GB/s"
                                                     for k in ("numpy_copy", "parallel_copy")
                                                     if k in c)
                     + f" (best {c['best']:.1f} GB/s, read + write counted)")
    if "peak_gflops" in info:
        p = info["peak_gflops"]
        lines.append(f"peak FLOP estimate: {p['sgemm']:.0f} GFLOP/s (float32 GEMM "
                     f"{p['n']}x{p['n']} through NumPy's BLAS)")
    if "gpu_copy_gbs" in info:
        g = info["gpu_copy_gbs"]
        lines.append(f"GPU: {g['device']}, device copy {g['cupy_copy']:.0f} GB/s (CuPy)")
    idle = info["idle_at_start"]
    lines.append(("idle at start: " if idle["idle"] else "NOT IDLE at start: ") + idle["text"])
    return lines


def _flagged(rows, text: str) -> list[str]:
    """A note naming the flagged timings (the first 8), or none."""
    if not rows:
        return []
    return [f"{len(rows)} timing(s) {text}: "
            + ", ".join(f"{r['program']}/{r['size']}/{r['target']}" for r in rows[:8])
            + (" ..." if len(rows) > 8 else "")]


def _busy_notes(rows) -> list[str]:
    busy = [r for r in rows if (r.get("others_cores") or 0) > 0.25]
    return _flagged(busy, "ran while other processes used more than 0.25 cores (worst "
                    f"{max((r['others_cores'] for r in busy), default=0):.2f})")


#: a timing is flagged when its threads blocked at least SLEEPS_FLAGGED times
#: a call and SLEEP_RATE_FLAGGED times a second: an idle process has a few
#: wakeups a second (about 10 in NumPy's seconds-long rows), a 16-thread
#: team whose cores are taken 10^5 (benchmarks/README.md, "Session 31")
SLEEPS_FLAGGED = 2.0
SLEEP_RATE_FLAGGED = 5000.0


def _slept(r) -> bool:
    s, t = r.get("sleeps") or 0, r.get("median") or 0
    return s >= SLEEPS_FLAGGED and t > 0 and s / t >= SLEEP_RATE_FLAGGED


def _sleep_notes(rows) -> list[str]:
    """Timings whose threads blocked and woke on every call: the team's
    threads slept at a barrier because a core they needed was busy (on the
    H100 machine's host, hotspot_rodinia small took 0.5 ms a call with
    under one and 2.5-7 ms with 500 a call under one busy process)."""
    slept = [r for r in rows if _slept(r)]
    return _flagged(slept, "had threads sleeping and waking on every call (worst "
                    f"{max((r['sleeps'] for r in slept), default=0):.0f} a call)")


def text_report(info, rows, compile_rows) -> str:
    lines = [f"command: {c}" for c in _commands(info)] + _machine_lines(info)
    lines += [f"note: {n}" for n in info["notes"] + _busy_notes(rows) + _sleep_notes(rows)]
    table = [HEADER] + _table_rows(rows)
    widths = [max(len(str(row[i])) for row in table) for i in range(len(HEADER))]
    lines.append("")
    for k, row in enumerate(table):
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    odd = [r for r in rows if r["status"] != "ok" and r["note"]]
    if odd:
        lines.append("")
        lines += [f"{r['program']}/{r['size']} {r['target']}: {r['status']}: {r['note']}"
                  for r in odd]
    goals = gpu_goals(info, rows)
    if goals:
        lines += ["", "the GPU issue's targets (ps.opencl against the peer the issue names):"]
        lines += [f"  {g[0]}/{g[1]}: {g[2]}: {g[3]}: {g[4]}" for g in goals]
    if compile_rows:
        lines += ["", "compile time and call overhead:"] + compile_text(compile_rows)
    return "\n".join(lines)


def compile_text(compile_rows) -> list[str]:
    head = ["target", "program", "cold compile", "cached load (new process)", "call"]
    table = [head]
    for c in compile_rows:
        table.append([c["target"], c["program"], fmt_time(c.get("cold_s")),
                      fmt_time(c.get("cached_load_s")), fmt_time(c.get("call_s"))])
    widths = [max(len(str(row[i])) for row in table) for i in range(len(head))]
    out = []
    for k, row in enumerate(table):
        out.append("  " + "  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
        if k == 0:
            out.append("  " + "  ".join("-" * w for w in widths))
    return out + [f"  note: {n}" for n in compile_notes(compile_rows)]


def compile_notes(compile_rows) -> list[str]:
    notes = sorted({c["note"] for c in compile_rows if c.get("note")})
    return notes + [f"{c['target']}: the new process took {fmt_time(c['process_s'])} in all "
                    f"(interpreter start, imports, loads)"
                    for c in compile_rows if c.get("process_s")]


def _md_table(head, body) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in body]
    return out


def pivot(rows) -> tuple[list[str], list[list[str]]]:
    """One row per program and size, one column per target: 'time (ratio)'."""
    targets = list(dict.fromkeys(r["target"] for r in rows))
    cells = defaultdict(dict)
    for r in rows:
        key = (r["program"], f"{r['size']} ({r['label']})")
        if r["status"] == "ok" and r.get("median") is not None:
            ratio = f" ({fmt_ratio(r['ratio'])})" if r.get("ratio") else ""
            cells[key][r["target"]] = fmt_time(r["median"]) + ratio
        else:
            cells[key][r["target"]] = {"skipped": "-", "ok": "checked"}.get(
                r["status"], r["status"].upper())
    body = [[p, s] + [cells[(p, s)].get(t, "") for t in targets] for (p, s) in cells]
    return ["program", "size"] + targets, body


def _commands(info) -> list[str]:
    c = info.get("command", "?")
    return c if isinstance(c, list) else [c]


def markdown_report(info, rows, compile_rows) -> str:
    commands = _commands(info)
    runs = info.get("runs", 1)
    when = (f"{info['started']}, {info.get('elapsed_s') or 0:.0f} s"
            + (f" in {runs} runs" if runs > 1 else "")
            + (f", {info['unfinished_runs']} of them cut short" if info.get("unfinished_runs")
               else ""))
    if len(commands) == 1:
        lines = [f"Command: `{commands[0]}` ({when})", ""]
    else:
        lines = [f"Commands ({when}):", ""] + [f"- `{c}`" for c in commands] + [""]
    lines += [f"- {line}" for line in _machine_lines(info)]
    lines += [f"- note: {n}" for n in info["notes"] + _busy_notes(rows)]
    lines += ["", "Median time per call (ratio to the best peer at that size; below 1x is "
              "faster than every peer):", ""]
    lines += _md_table(*pivot(rows))
    goals = gpu_goals(info, rows)
    if goals:
        lines += ["", "The GPU issue's targets (ps.opencl against the peer the issue names, "
                  "measured in this run):", ""]
        lines += _md_table(["program", "size", "target", "measured", "verdict"], goals)
    lines += ["", "All columns (spread = (slowest - fastest) / median of the samples):", ""]
    lines += _md_table(HEADER, _table_rows(rows))
    odd = [r for r in rows if r["status"] != "ok" and r["note"]]
    if odd:
        lines += [""] + [f"- {r['program']}/{r['size']} {r['target']}: {r['status']}: "
                         f"{r['note']}" for r in odd]
    if compile_rows:
        lines += ["", "Compile time and call overhead:", ""]
        lines += _md_table(["target", "program", "cold compile", "cached load (new process)",
                            "call"],
                           [[c["target"], c["program"], fmt_time(c.get("cold_s")),
                             fmt_time(c.get("cached_load_s")), fmt_time(c.get("call_s"))]
                            for c in compile_rows])
        lines += [""] + [f"- {n}" for n in compile_notes(compile_rows)]
    return "\n".join(lines) + "\n"


#: issue 7's "Done when": (program, size, what, peer, goal); what is "copy" (the fraction of
#: the GPU's copy bandwidth, at least goal) or "speedup" (peer time / ps.opencl time)
GPU_GOALS = [
    ("saxpy", "large", "copy", None, 0.9),
    ("sum", "large", "copy", None, 0.9),
    ("prefix_sum", "large", "speedup", "cupy", 2.0),
    ("histogram", "large", "speedup", "cupy", 3.0),
    ("filter", "large", "speedup", "cupy", 2.0),
    ("nbody", "large", "speedup", "cuda", 1.3),
    ("locvolcalib", "medium", "speedup", "cupy", 1.0),
]
GOAL_TARGET = "ps.opencl"


def gpu_goals(info, rows) -> list[list[str]]:
    """One line per target of the GPU issue that this run measured (empty with no GPU
    peer), and one for "no benchmark slower than CuPy"."""
    if not any(r.get("device") == "gpu" and r["kind"] == "peer" and r.get("median")
               for r in rows):
        return []
    by = {(r["program"], r["size"], r["target"]): r for r in rows}
    gpu_copy = (info.get("gpu_copy_gbs") or {}).get("cupy_copy")
    out = []
    for program, size, what, peer, goal in GPU_GOALS:
        mine = by.get((program, size, GOAL_TARGET))
        if mine is None:
            continue
        if not mine.get("median"):
            out.append([program, size, GOAL_TARGET, mine["status"], "not measured"])
            continue
        if what == "copy":
            if not gpu_copy or not mine.get("gbs"):
                continue
            frac = mine["gbs"] / gpu_copy
            out.append([program, size, GOAL_TARGET, f"{mine['gbs']:.0f} GB/s = {100 * frac:.0f}% "
                        f"of the device copy ({gpu_copy:.0f} GB/s)",
                        f"{'met' if frac >= goal else 'NOT met'} (goal {100 * goal:.0f}%)"])
        else:
            theirs = by.get((program, size, peer))
            if not theirs or not theirs.get("median"):
                out.append([program, size, GOAL_TARGET, f"no {peer} time", "not measured"])
                continue
            speedup = theirs["median"] / mine["median"]
            out.append([program, size, GOAL_TARGET,
                        f"{speedup:.3g}x {peer}'s speed ({fmt_time(mine['median'])} vs "
                        f"{fmt_time(theirs['median'])})",
                        f"{'met' if speedup >= goal else 'NOT met'} (goal {goal:g}x)"])
    slower = []
    compared = 0
    for (program, size, target), r in by.items():
        cupy = by.get((program, size, "cupy"))
        if target == GOAL_TARGET and r.get("median") and cupy and cupy.get("median"):
            compared += 1
            if r["median"] > cupy["median"]:
                slower.append(f"{program}/{size} ({r['median'] / cupy['median']:.3g}x "
                              f"CuPy's time)")
    if compared:
        out.append(["every program", "", GOAL_TARGET, f"slower than CuPy in {len(slower)} of "
                    f"{compared}" + (": " + ", ".join(slower) if slower else ""),
                    "met" if not slower else "NOT met (goal: none slower)"])
    return out


def chart(rows, path) -> str | None:
    """Draws time relative to the best peer, one panel per size; None when done,
    else why not (no matplotlib, nothing timed)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "skipped (matplotlib does not import; pip install '.[bench]')"
    timed = [r for r in rows if r.get("ratio")]
    if not timed:
        return "skipped (nothing was timed against a peer)"
    sizes = list(dict.fromkeys(r["size"] for r in timed))
    targets = list(dict.fromkeys(r["target"] for r in timed))
    fig, axes = plt.subplots(len(sizes), 1, figsize=(12, 3.2 * len(sizes)), squeeze=False)
    colours = plt.get_cmap("tab10")
    for ax, size in zip(axes[:, 0], sizes):
        here = [r for r in timed if r["size"] == size]
        programs = list(dict.fromkeys(r["program"] for r in here))
        width = 0.8 / len(targets)
        for k, t in enumerate(targets):
            xs, ys = [], []
            for i, p in enumerate(programs):
                for r in here:
                    if r["program"] == p and r["target"] == t:
                        xs.append(i + (k - (len(targets) - 1) / 2) * width)
                        ys.append(r["ratio"])
            if xs:
                ax.bar(xs, ys, width, label=t, color=colours(k % 10))
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_ylim(bottom=min(0.5, 0.8 * min(r["ratio"] for r in here)))   # a 1x bar shows
        ax.set_xticks(range(len(programs)))
        ax.set_xticklabels(programs, rotation=20, ha="right", fontsize=8)
        ax.set_ylabel("time / best peer")
        ax.set_title(f"size {size} (lower is faster)", fontsize=10)
        ax.legend(fontsize=7, ncol=len(targets), loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None
