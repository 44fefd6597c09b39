"""Where a compile's time goes: wall time per stage, recorded on request.

The compiler marks its stages with `stage(name)` (the libcst parse and
metadata, translation, the type check, each pass of codegen/stages.py, the
emitter, LLVM's parse, optimisation and code generation, the link, the
load); nothing is recorded, and a mark costs one context-variable read,
unless a `recording()` is active in this thread or task. So the numbers a
report shows come from the code path a user's compile takes, not from a
copy of it. Issue 17 item 5 (sub-second compiles) is measured with it:
`codegen/cpu/backend.compile_breakdown` and benchmarks/compile_report.py.
"""
from __future__ import annotations

import contextvars
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Optional

_CURRENT: contextvars.ContextVar = contextvars.ContextVar("pyshark_compile_times", default=None)


@dataclass
class StageTimes:
    """Seconds per stage, in the order the stages first ran; a stage that
    runs twice (a module of several sources) adds up."""
    seconds: dict = field(default_factory=dict)
    #: CPU seconds of the whole process (every thread) per stage: steadier than
    #: wall time on a loaded machine; LLVM's parallel parts add up here
    cpu: dict = field(default_factory=dict)
    #: the wall time of the whole recording (stages plus what falls between them)
    total: float = 0.0
    #: the process CPU time of the whole recording
    total_cpu: float = 0.0

    def add(self, name: str, seconds: float, cpu: float = 0.0) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds
        self.cpu[name] = self.cpu.get(name, 0.0) + cpu

    @property
    def unattributed(self) -> float:
        """Wall time inside the recording that no stage claimed."""
        return max(0.0, self.total - sum(self.seconds.values()))

    def as_dict(self) -> dict:
        return {"total_s": self.total, "stages_s": dict(self.seconds),
                "stages_cpu_s": dict(self.cpu), "other_s": self.unattributed,
                "total_cpu_s": self.total_cpu}

    def table(self) -> str:
        """One line per stage: name, milliseconds, share of the total."""
        tot = self.total or sum(self.seconds.values()) or 1.0
        rows = [(n, s, self.cpu.get(n, 0.0)) for n, s in self.seconds.items()]
        rows.append(("(other)", self.unattributed,
                     max(0.0, self.total_cpu - sum(self.cpu.values()))))
        return "\n".join(f"{n:24s} {s * 1e3:9.1f} ms {100 * s / tot:5.1f}%  cpu {c * 1e3:9.1f} ms"
                         for n, s, c in rows) \
            + f"\n{'total':24s} {self.total * 1e3:9.1f} ms         cpu {self.total_cpu * 1e3:9.1f} ms"


def current() -> Optional[StageTimes]:
    """The active recording, or None."""
    return _CURRENT.get()


@contextmanager
def recording() -> Iterator[StageTimes]:
    """Records every stage run inside the block (nested recordings: the
    innermost one)."""
    rec = StageTimes()
    token = _CURRENT.set(rec)
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        yield rec
    finally:
        rec.total = time.perf_counter() - t0
        rec.total_cpu = time.process_time() - c0
        _CURRENT.reset(token)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Times the block as stage `name` when a recording is active."""
    rec = _CURRENT.get()
    if rec is None:
        yield
        return
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        rec.add(name, time.perf_counter() - t0, time.process_time() - c0)


__all__ = ["StageTimes", "current", "recording", "stage"]
