"""The second tier of a cpu compile: the optimised module built from the
quick one's LLVM IR (docs/cpu-backend.md, "Tiered compilation").

A cold compile through the Wrapper runs every stage once, links the emitted
LLVM IR through the quick pipeline (link._run_quick_pipeline) and keeps that
IR in the quick module's directory. `python -m pyshark.codegen.cpu.upgrade
QUICK_DIR TARGET_DIR` then runs LLVM's O3 pipeline on the same IR and writes
the optimised module to TARGET_DIR, the cache entry a later compile_and_load
loads directly. It runs in a process of its own (wrapper/tiers.py starts it
and swaps the entries when it is done): no Python stage runs again, LLVM
holds no lock of the user's process, and an upgrade still running when the
user's program exits completes the cache entry for the next run. It runs at
the user's priority: on the 2-core box a lower one (nice 5 or 10) let a
program that keeps both cores busy with the quick code starve it for more
than 10 s (LocVolCalib, docs/cpu-backend.md).
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from .backend import ABI_FILE, HEADER_FILE, KIR_FILE, LIB_FILE, file_sha256

#: the upgrade's niceness above the user's (PYSHARK_UPGRADE_NICE overrides)
NICE = 0


def build_optimised(quick_dir: Path, directory: Path) -> dict:
    """Writes into `directory` the optimised module of the quick module in
    `quick_dir`: the library from the same LLVM IR through the O3 pipeline,
    its abi.json (the new library's hash), the header, the kernel IR and a
    manifest that lists no LLVM IR. Returns the manifest."""
    from pyshark.wrapper.artifacts import MANIFEST, read_manifest

    from .link import optimise_and_build
    quick_dir, directory = Path(quick_dir), Path(directory)
    manifest = read_manifest(quick_dir)
    files = dict(manifest["files"])
    parts = [(quick_dir / name).read_text() for name in files.pop("llvm_parts")]
    optimise_and_build(parts, directory / LIB_FILE,
                       fastmath=bool(manifest.get("options", {}).get("fastmath")))
    abi = json.loads((quick_dir / files["abi"]).read_text())
    abi["library_sha256"] = file_sha256(directory / LIB_FILE)
    (directory / ABI_FILE).write_text(json.dumps(abi))
    for name in (HEADER_FILE, KIR_FILE):
        if (quick_dir / name).is_file():
            shutil.copyfile(quick_dir / name, directory / name)
    manifest["files"] = files
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
