"""The rows of a `pyshark bench` results.json where a PyShark target is
behind a peer: the medians, the other processes' cores during PyShark's
samples, and the per-round ratios (an interleaved run's sample k of every
target comes from round k, so ratio k compares calls made seconds apart;
"slower in 4/5" is the sign test's count); then the compile goals.

    python scripts/bench_behind.py OUT/results.json [--target ps.cpu] [--peers numba,numpy]
"""
from __future__ import annotations

import argparse
import json
import statistics


def behind(results: dict, target: str, peers: list[str]) -> list[str]:
    by: dict = {}
    for r in results["results"]:
        if r.get("median") is not None:
            by.setdefault((r["program"], r["size"]), {})[r["target"]] = r
    lines = []
    for (prog, size), rows in by.items():
        ours = rows.get(target)
        if ours is None:
            continue
        for peer in peers:
            theirs = rows.get(peer)
            if theirs is None or ours["median"] <= theirs["median"]:
                continue
            k = min(len(ours["samples"]), len(theirs["samples"]))
            ratios = [a / b for a, b in zip(ours["samples"][:k], theirs["samples"][:k])]
            others = ours.get("others_cores")
            lines.append(
                f"{prog:20s} {size:7s} {target} {ours['median'] * 1e3:10.4f} ms  {peer} "
                f"{theirs['median'] * 1e3:10.4f} ms  ratio {ours['median'] / theirs['median']:.3f}"
                f"  per round {statistics.median(ratios):.3f} ({min(ratios):.2f}-{max(ratios):.2f}),"
                f" slower in {sum(x > 1 for x in ratios)}/{k}"
                f"  others {'-' if others is None else f'{others:.2f}'} cores")
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results")
    p.add_argument("--target", default="ps.cpu")
    p.add_argument("--peers", default="numba,numpy")
    a = p.parse_args()
    with open(a.results) as f:
        results = json.load(f)
    lines = behind(results, a.target, a.peers.split(","))
    print("\n".join(lines) if lines else f"{a.target} is behind no peer")
    for c in results.get("compile", []):
        if "goal" in c.get("program", ""):
            print(f"{c['program']}: {c['cold_s']:.3f} s")


if __name__ == "__main__":
    main()
