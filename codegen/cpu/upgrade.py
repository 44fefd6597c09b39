"""The second tier of a cpu compile: the optimised module built from the
quick one's core IR (docs/cpu-backend.md, "Tiered compilation").

A cold compile through the Wrapper translates and checks the module, runs
the pipeline without its speed-only kernel IR passes (stages.SPEED_ONLY),
links the LLVM IR through the quick pipeline (link._run_quick_pipeline) and
keeps the checked core IR program in the quick module's directory.
`python -m pyshark.codegen.cpu.upgrade QUICK_DIR TARGET_DIR` then runs the
whole pipeline on that program, LLVM's O3 included, and writes the
optimised module to TARGET_DIR, the cache entry a later compile_and_load
loads directly. It runs in a process of its own (wrapper/tiers.py starts it
and swaps the entries when it is done): the front end does not run again,
LLVM holds no lock of the user's process, and an upgrade still running when
the user's program exits completes the cache entry for the next run. It runs
at the user's priority: on the 2-core box a lower one (nice 5 or 10) let a
program that keeps both cores busy with the quick code starve it for more
than 10 s (LocVolCalib, docs/cpu-backend.md).
"""
from __future__ import annotations

import json
import os
import pickle
import sys
from pathlib import Path

#: the upgrade's niceness above the user's (PYSHARK_UPGRADE_NICE overrides)
NICE = 0


def build_optimised(quick_dir: Path, directory: Path) -> dict:
    """Writes into `directory` the optimised module of the quick module in
    `quick_dir`: the cpu backend's compile of its checked core IR program,
    with the quick module's manifest listing the new files. Returns the
    manifest."""
    from pyshark.wrapper.artifacts import MANIFEST, read_manifest
    from pyshark.wrapper.backend import Options

    from .backend import CpuBackend
    quick_dir, directory = Path(quick_dir), Path(directory)
    manifest = read_manifest(quick_dir)
    program = pickle.loads((quick_dir / manifest["files"]["core_program"]).read_bytes())
    options = {k: bool(v) for k, v in manifest.get("options", {}).items()
               if k in ("unsafe", "fastmath")}
    manifest["files"] = CpuBackend(Options(**options)).compile_program(program, directory)
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m pyshark.codegen.cpu.upgrade QUICK_DIR TARGET_DIR",
              file=sys.stderr)
        return 2
    from pyshark.wrapper.artifacts import write_atomically
    quick_dir, target = Path(argv[0]), Path(argv[1])
    try:
        nice = int(os.environ.get("PYSHARK_UPGRADE_NICE", NICE))
        if nice:
            os.nice(nice)
    except (OSError, ValueError):
        pass
    if not (target / "manifest.json").is_file():
        write_atomically(target, lambda d: build_optimised(quick_dir, d))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
