"""pyproject.toml lists every package of the source tree: a subpackage left
out installs without its files (codegen/opencl/native was: the installed
package then failed every opencl compile with ModuleNotFoundError), and a
non-Python file a package reads at run time must be package data."""
from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _folders() -> dict:
    """dotted package name -> its folder, for every folder with an __init__.py
    under the folders pyproject maps (package-dir) and pyshark/."""
    cfg = _config()
    roots = {"pyshark": ROOT / "pyshark"}
    roots.update({name: ROOT / d for name, d in cfg.get("package-dir", {}).items()})
    out = {}
    for name, folder in roots.items():
        for init in folder.rglob("__init__.py"):
            rel = init.parent.relative_to(folder)
            if any(p.startswith((".", "__")) for p in rel.parts):
                continue
            out[".".join((name,) + rel.parts)] = init.parent
    return out


def test_every_package_is_listed():
    listed = set(_config()["packages"])
    missing = sorted(set(_folders()) - listed)
    assert not missing, f"packages missing from pyproject.toml: {missing}"


def test_the_native_runtime_source_is_package_data():
    """Every C source and header of a package (the opencl native runtime, the
    C fast paths of entry calls) matches a package-data pattern: they are
    compiled on the user's machine."""
    from fnmatch import fnmatch
    data = _config()["package-data"]
    seen = []
    for name, folder in _folders().items():
        sources = [f.name for f in folder.iterdir() if f.suffix in (".c", ".h")]
        seen += sources
        patterns = data.get(name, [])
        missing = [n for n in sources if not any(fnmatch(n, p) for p in patterns)]
        assert not missing, f"not package data of {name} in pyproject.toml: {missing}"
    assert "rt.h" in seen and seen.count("fastcall.c") == 2
