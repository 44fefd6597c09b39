"""Tiered compilation: a quick module at once, the optimised one in the background.

A cold compile on a backend with tiers (cpu) leaves out the passes that
only make code faster and links through a cheap LLVM pipeline
(codegen/cpu/link._run_quick_pipeline), and returns: the entries run that
quick code at once. An `Upgrade` then builds the optimised module from the
same checked core IR in another process (codegen/cpu/upgrade.py) and, when
it is done, swaps every entry of the
Wrapper to it, the callables already handed out included (their C call
objects are pointed at the new library), and a call that the main thread is
running on the quick code is stopped and run again there (CpuModule.redirect). This is what JIT compilers do for
start-up time (V8's and the JVM's tiers); see docs/cpu-backend.md, "Tiered
compilation", for the measurements and what may differ between the tiers
(only what the golden rule allows).

PYSHARK_TIERED=0 (or Wrapper(tiered=False)) compiles the optimised module
directly, as before.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

ENV = "PYSHARK_TIERED"


def tiered_by_default() -> bool:
    """Wrapper(tiered=None): on unless PYSHARK_TIERED=0."""
    return os.environ.get(ENV, "1").strip() not in ("0", "false", "no", "off")


class UpgradeWarning(RuntimeWarning):
    """The optimised module of a tiered compile could not be built; the quick
    module's entries keep running (their results are as valid, slower)."""


class _Build:
    """The process that builds one optimised module into `target`, shared
    by every Upgrade of this process that waits for that target (a second
    compile_and_load of the same module, in a notebook say, joins the build
    already running instead of starting another)."""

    _running: dict = {}
    _lock = threading.Lock()

    def __init__(self, command: list[str], target: Path):
        self.target = Path(target)
        self.error: str | None = None
        self.done = threading.Event()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self._proc = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      env=env)
        threading.Thread(target=self._run, name="pyshark-upgrade-build", daemon=True).start()

    @classmethod
    def for_target(cls, command: list[str], target: Path) -> "_Build":
        with cls._lock:
            build = cls._running.get(str(target))
            if build is None:
                build = cls._running[str(target)] = cls(command, target)
            return build

    def _run(self) -> None:
        try:
            _, err = self._proc.communicate()
            if self._proc.returncode != 0:
                tail = err.decode(errors="replace").strip().splitlines()[-20:]
                self.error = (f"the upgrade process exited with {self._proc.returncode}:\n"
                              + "\n".join(tail))
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            with self._lock:
                if self._running.get(str(self.target)) is self:
                    del self._running[str(self.target)]
            self.done.set()


class Upgrade:
    """One module's upgrade: the build of its optimised module into
    `target` (a _Build, shared), and a daemon thread that waits for it,
    loads the result with `load(target)` and calls `swap(module)`. An
    upgrade that fails leaves the quick module in place, with an
    UpgradeWarning and `error` saying why."""

    def __init__(self, command: list[str], target: Path, load, swap):
        self.target = Path(target)
        self.error: str | None = None
        self._done = threading.Event()
        self._load, self._swap = load, swap
        self.build = _Build.for_target(command, self.target)
        threading.Thread(target=self._finish, name="pyshark-upgrade", daemon=True).start()

    def _finish(self) -> None:
        try:
            self.build.done.wait()
            if self.build.error is not None:
                raise RuntimeError(self.build.error)
            self._swap(self._load(self.target))
        except Exception as exc:            # the quick module stays: correct, slower
            self.error = f"{type(exc).__name__}: {exc}"
            warnings.warn(f"pyshark: the optimised module ({self.target}) could not be built; "
                          f"the quick tier's code keeps running ({self.error}). Set "
                          f"{ENV}=0 to compile optimised code directly.", UpgradeWarning)
        finally:
            self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Waits until the upgrade ended (swapped or failed); False on timeout."""
        return self._done.wait(timeout)


__all__ = ["ENV", "tiered_by_default", "Upgrade", "UpgradeWarning"]
