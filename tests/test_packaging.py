"""pyproject.toml lists every package folder of the repository: an installed
PyShark (pip install ., as on the GPU machine) without one fails only when
that package is first imported (pyshark.codegen.opencl.native was missing,
and every opencl compile failed there)."""
from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _installed_as() -> dict:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {"pyshark": ROOT / "pyshark", **{name: ROOT / d
                                            for name, d in conf["package-dir"].items()}}, \
        set(conf["packages"])


def test_every_package_folder_is_listed():
    roots, listed = _installed_as()
    found = set()
    for name, folder in roots.items():
        for init in folder.rglob("__init__.py"):
            rel = init.parent.relative_to(folder)
            if any(part.startswith((".", "_")) or part in ("results",) for part in rel.parts):
                continue
            found.add(".".join((name,) + rel.parts))
    missing = sorted(found - listed)
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {missing}"
