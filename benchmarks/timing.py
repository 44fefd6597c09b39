"""Timing one call: warm-up, calibrated repetitions, median and spread.

A sample is the mean of `inner` back-to-back calls, with `inner` chosen so
that a sample lasts at least `min_sample` seconds (so microsecond calls are
not lost in timer noise); the result keeps every sample. Slow calls get
fewer samples so that no target spends more than about `budget` seconds.
"""
from __future__ import annotations

import math
import resource
import statistics
import time
from dataclasses import asdict, dataclass, field


@dataclass
class Timing:
    samples: list = field(default_factory=list)   # seconds per call
    inner: int = 1                                 # calls per sample
    first_call: float = 0.0                        # seconds of the very first call
    others_cores: float | None = None              # cores other processes used meanwhile
    sleeps: float | None = None                    # voluntary context switches per call
    note: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> float:
        """(slowest - fastest) / median of the samples."""
        if len(self.samples) < 2:
            return 0.0
        return (max(self.samples) - min(self.samples)) / self.median

    def as_dict(self) -> dict:
        d = asdict(self)
        d["median"] = self.median if self.samples else None
        d["spread"] = self.spread if self.samples else None
        return d


def first_calls(call, warmup: int, budget: float | None = None) -> tuple[object, float, float]:
    """Runs the warm-up calls: (result of the last one, seconds of the first, of the last).
    At least one call; no further one once `budget` seconds are spent."""
    first = last = spent = 0.0
    result = None
    for i in range(max(1, warmup)):
        if i and budget is not None and spent > budget:
            break
        t0 = time.perf_counter()
        result = call()
        last = time.perf_counter() - t0
        spent += last
        if i == 0:
            first = last
    return result, first, last


def measure(call, estimate: float, *, repeats: int = 5, min_sample: float = 0.02,
            budget: float = 30.0, limit: float | None = None) -> Timing:
    """Times `call` after warm-up; `estimate` is the duration of one warm call.
    `limit` (seconds) cuts the measurement short (targets.time_limit): the
    samples finished by then are kept, and with none it raises Timeout."""
    from .machine import OthersMeter
    from .targets import Timeout, time_limit
    estimate = max(estimate, 1e-7)
    inner = max(1, min(100_000, math.ceil(min_sample / estimate)))
    n = repeats
    note = ""
    if estimate * inner * repeats > budget:
        n = max(1, int(budget / (estimate * inner)))
        note = f"{n} run{'s' if n > 1 else ''} (time budget {budget:g} s)"
    timing = Timing(inner=inner, note=note)
    meter = OthersMeter().start()
    slept = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw
    try:
        with time_limit(limit):
            for _ in range(n):
                t0 = time.perf_counter()
                for _ in range(inner):
                    call()
                timing.samples.append((time.perf_counter() - t0) / inner)
    except Timeout:
        if not timing.samples:
            raise
        timing.note = (f"{len(timing.samples)} of {n} samples (time limit "
                       f"{limit:.3g} s)")
    timing.others_cores = meter.stop()
    # a thread of this process that blocked (libgomp's team asleep at a
    # barrier after its spin ran out): on an idle machine a warm parallel
    # call blocks about never; hundreds a call mean its cores were taken
    calls = len(timing.samples) * inner
    timing.sleeps = (resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw - slept) / max(calls, 1)
    return timing
