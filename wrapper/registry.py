"""The one table of backends, ordered fastest first.

Backends are named by a lazy "module:Class" path so that importing the
wrapper never imports LLVM or OpenCL, and so that a native backend joins the
table with one line. A backend whose module does not exist yet (or whose
class says it cannot run here) is simply not available.
"""
from __future__ import annotations

import importlib

# name -> "module:Class", fastest first. The native backends are listed
# already; they become available when their modules land.
_BACKENDS: dict[str, str | type] = {
    "opencl": "pyshark.codegen.opencl.backend:OpenCLBackend",
    "cpu": "pyshark.codegen.cpu.backend:CpuBackend",
    "core": "pyshark.wrapper.core_backend:CoreBackend",
    "python": "pyshark.wrapper.python_backend:PythonBackend",
}

class BackendUnavailable(ValueError):
    """A known backend that cannot be used (not built yet, or no device)."""


def register_backend(name: str, cls: str | type, *, before: str | None = None) -> None:
    """Adds (or replaces) a backend; `before` places it ahead of another name."""
    if before is None or before not in _BACKENDS:
        _BACKENDS[name] = cls
        return
    items = [(k, v) for k, v in _BACKENDS.items() if k != name]
    _BACKENDS.clear()
    for k, v in items:
        if k == before:
            _BACKENDS[name] = cls
        _BACKENDS[k] = v


def known_backends() -> list[str]:
    """Every backend name PyShark knows, available or not, fastest first."""
    return list(_BACKENDS)


def _load(name: str) -> type:
    target = _BACKENDS[name]
    if isinstance(target, type):
        return target
    mod_name, _, cls_name = target.partition(":")
    try:
        module = importlib.import_module(mod_name)
    except ModuleNotFoundError as exc:
        # Only "this backend's module is missing" means not built; a missing
        # dependency inside an existing backend is a real error.
        if exc.name and (mod_name == exc.name or mod_name.startswith(exc.name + ".")):
            raise BackendUnavailable(f"backend {name!r} is not built yet") from None
        raise
    cls = getattr(module, cls_name, None)
    if cls is None:
        raise BackendUnavailable(f"backend {name!r} is not built yet ({target} is missing)")
    _BACKENDS[name] = cls
    return cls


def _usable(name: str) -> bool:
    try:
        cls = _load(name)
    except BackendUnavailable:
        return False
    check = getattr(cls, "is_available", None)
    return bool(check()) if callable(check) else True


def available_backends() -> list[str]:
    """Backends that can run here, fastest first (a backend listed before
    "cpu" whose class says it does not outrank it here -- OpenCL on a CPU
    device -- goes after it)."""
    names = [name for name in _BACKENDS if _usable(name)]
    if "cpu" in names:
        for name in list(names[:names.index("cpu")]):
            check = getattr(_load(name), "outranks_cpu", None)
            if callable(check) and not check():
                names.remove(name)
                names.insert(names.index("cpu") + 1, name)
    return names


def get_backend(name: str) -> type:
    """The backend class for `name`: ValueError for an unknown name,
    BackendUnavailable (a ValueError) for one that cannot run here."""
    if name not in _BACKENDS:
        raise ValueError(f"unknown backend {name!r}; available backends: "
                         f"{', '.join(available_backends())}")
    try:
        cls = _load(name)
    except BackendUnavailable as exc:
        raise BackendUnavailable(f"{exc}; available backends: "
                                 f"{', '.join(available_backends())}") from None
    check = getattr(cls, "is_available", None)
    if callable(check) and not check():
        why = unavailable_reason(name)
        raise BackendUnavailable(f"backend {name!r} cannot run on this machine"
                                 f"{': ' + why if why else ''}; available "
                                 f"backends: {', '.join(available_backends())}")
    return cls



def unavailable_reason(name: str) -> str:
    """Why an available-looking backend cannot run here ("" when it can, or
    when its class does not say): for opencl, each device and why it is not
    usable, and what to do."""
    try:
        cls = _load(name)
    except BackendUnavailable as exc:
        return str(exc)
    reason = getattr(cls, "unavailable_reason", None)
    return reason() if callable(reason) else ""
