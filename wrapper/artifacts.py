"""On-disk artifacts: the compile cache and `pyshark build` output share one layout.

An artifact directory holds `manifest.json` (entries with their surface
types, backend, options, source hash, pyshark version) and the backend's own
files (for "core": the pickled, checked Program). The cache stores one such
directory per module under <cache>/<backend>/<key>, the key being a hash of
the source text, the options, the backend name, the pyshark version and a
fingerprint of the compiler's own code (so that a changed compiler never
serves a stale artifact during development).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

from pyshark import version as version_module
from pyshark.core.types import ScalarType, SArray, SRecord, SScalar, SType, STuple
from pyshark.version import __version__

MANIFEST = "manifest.json"
FORMAT = 1


def default_cache_dir() -> Path:
    env = os.environ.get("PYSHARK_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path("~/.cache/pyshark").expanduser()


def pyshark_version() -> str:
    return __version__


@lru_cache(maxsize=None)
def compiler_fingerprint() -> str:
    """A hash of the .py (and .c) files of the installed pyshark packages."""
    import pyshark.codegen
    roots = {Path(version_module.__file__).parent, Path(pyshark.codegen.__file__).parent,
             Path(__file__).parent}
    h = hashlib.sha256()
    for root in sorted(roots):
        # the .py files, and the C runtime the opencl backend links in (native/rt*.c, rt.h)
        for f in sorted(list(root.rglob("*.py")) + list(root.rglob("*.c"))
                        + list(root.rglob("*.h"))):
            if "tests" in f.parts:
                continue
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def source_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def cache_key(source_text: str, backend: str, options: dict) -> str:
    payload = json.dumps({"source": source_hash(source_text), "backend": backend,
                          "options": options, "version": pyshark_version(),
                          "compiler": compiler_fingerprint()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def cache_path(cache_dir: Path, backend: str, key: str) -> Path:
    return Path(cache_dir) / backend / key


def write_atomically(target: Path, fill) -> Path:
    """Calls fill(tmpdir) and renames tmpdir to target (first writer wins)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        fill(tmp)
        try:
            os.replace(tmp, target) if not target.exists() else shutil.rmtree(tmp)
        except OSError:       # another process won the race
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


# ---------------------------------------------------------------------------
# Surface types as JSON (for manifests)


def stype_to_json(st: SType):
    if isinstance(st, SScalar):
        return st.t.value
    if isinstance(st, SArray):
        return {"array": stype_to_json(st.elem)}
    if isinstance(st, STuple):
        return {"tuple": [stype_to_json(e) for e in st.elems]}
    if isinstance(st, SRecord):
        return {"record": st.name, "fields": [[n, stype_to_json(t)] for n, t in st.fields]}
    raise TypeError(f"not a surface type: {st!r}")


def stype_from_json(j) -> SType:
    if isinstance(j, str):
        return SScalar(ScalarType(j))
    if "array" in j:
        return SArray(stype_from_json(j["array"]))
    if "tuple" in j:
        return STuple(tuple(stype_from_json(e) for e in j["tuple"]))
    if "record" in j:
        return SRecord(j["record"], tuple((n, stype_from_json(t)) for n, t in j["fields"]))
    raise ValueError(f"bad surface type in manifest: {j!r}")


def entries_to_json(program) -> dict:
    out = {}
    for name, e in program.entries.items():
        out[name] = {"params": [[p.name, stype_to_json(p.stype)] for p in e.params],
                     "result": stype_to_json(e.ret)}
        if e.loc is not None:
            out[name]["loc"] = [e.loc.line, e.loc.col]
    return out


def write_manifest(directory: Path, *, backend: str, options: dict, source_path: str,
                   source_text: str, program, files: dict[str, str]) -> dict:
    manifest = {
        "format": FORMAT,
        "pyshark_version": pyshark_version(),
        "compiler": compiler_fingerprint(),
        "backend": backend,
        "options": options,
        "source": str(source_path),
        "source_hash": source_hash(source_text),
        "entries": entries_to_json(program),
        "files": files,
    }
    (Path(directory) / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def read_manifest(directory: Path) -> dict:
    path = Path(directory) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"{directory}: no {MANIFEST} (not a `pyshark build` output)")
    manifest = json.loads(path.read_text())
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{directory}: manifest format {manifest.get('format')!r}, "
                         f"this pyshark reads format {FORMAT}; rebuild it")
    return manifest
