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
    #: the wall time of the whole recording (stages plus what falls between them)
    total: float = 0.0

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    @property
    def unattributed(self) -> float:
        """Wall time inside the recording that no stage claimed."""
        return max(0.0, self.total - sum(self.seconds.values()))

    def as_dict(self) -> dict:
        return {"total_s": self.total, "stages_s": dict(self.seconds),
                "other_s": self.unattributed}

    def table(self) -> str:
        """One line per stage: name, milliseconds, share of the total."""
        tot = self.total or sum(self.seconds.values()) or 1.0
        rows = list(self.seconds.items()) + [("(other)", self.unattributed)]
        return "\n".join(f"{n:24s} {s * 1e3:9.1f} ms {100 * s / tot:5.1f}%" for n, s in rows) \
            + f"\n{'total':24s} {self.total * 1e3:9.1f} ms"


def current() -> Optional[StageTimes]:
    """The active recording, or None."""
    return _CURRENT.get()


@contextmanager
def recording() -> Iterator[StageTimes]:
    """Records every stage run inside the block (nested recordings: the
    innermost one)."""
    rec = StageTimes()
    token = _CURRENT.set(rec)
    t0 = time.perf_counter()
    try:
        yield rec
    finally:
        rec.total = time.perf_counter() - t0
        _CURRENT.reset(token)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Times the block as stage `name` when a recording is active."""
    rec = _CURRENT.get()
    if rec is None:
        yield
        return
    t0 = time.perf_counter()
    try:
        yield
    finally:
        rec.add(name, time.perf_counter() - t0)


__all__ = ["StageTimes", "current", "recording", "stage"]
