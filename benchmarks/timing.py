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
    At least one call, and a second one when `warmup` asks for it whatever the
    first cost (the first may be a JIT compile: the last call's time is what
    the timing plans with); no further one once `budget` seconds are spent
    after the first."""
    first = last = spent = 0.0
    result = None
    for i in range(max(1, warmup)):
        if i > 1 and budget is not None and spent > budget:
            break
        t0 = time.perf_counter()
        result = call()
        last = time.perf_counter() - t0
        if i == 0:
            first = last
        else:
            spent += last
    return result, first, last


#: a call shorter than this gets an untimed call before each interleaved sample
WARM_BELOW = 0.5


class Sampler:
    """One target's timed samples, taken one at a time, so that the runner can
    let the targets of a row take turns (randomized multiple interleaved
    trials: A. Abedi and T. Brecht, "Conducting repeatable experiments in
    highly variable cloud computing environments", ICPE 2017). A sample is
    `inner` back-to-back calls; `estimate` is the duration of one warm call.

    `sample(warm=True)` makes one untimed call first, for a turn that comes
    after a pause: in these VMs the first call after 20-50 ms asleep took
    0.3 ms more (saxpy at 2^20, PyShark and Numba alike) and Numba's libgomp
    team 2-6 ms more (scripts/wake_probe.py), which back-to-back calls never
    pay. The meter of other processes' cores and the context-switch count
    cover this target's samples only, not the untimed call."""

    def __init__(self, call, estimate: float, *, repeats: int = 5, min_sample: float = 0.02,
                 budget: float = 30.0):
        from .machine import OthersMeter
        self.call = call
        self.repeats, self.min_sample, self.budget = repeats, min_sample, budget
        self.timing = Timing()
        self._plan(estimate)
        self.meter = OthersMeter()
        self.switches = 0
        self.spent = 0.0                  # seconds inside sample(), for a time limit

    def _plan(self, estimate: float) -> None:
        self.estimate = estimate = max(estimate, 1e-7)
        self.inner = max(1, min(100_000, math.ceil(self.min_sample / estimate)))
        self.n = self.repeats
        self.timing.inner, self.timing.note = self.inner, ""
        if estimate * self.inner * self.repeats > self.budget:
            self.n = max(1, int(self.budget / (estimate * self.inner)))
            self.timing.note = f"{self.n} run{'s' if self.n > 1 else ''} (time budget {self.budget:g} s)"

    def wants(self) -> bool:
        return len(self.timing.samples) < self.n

    def wants_warm_call(self) -> bool:
        return self.estimate < WARM_BELOW

    def sample(self, warm: bool = False) -> None:
        """One timed sample, after one untimed call if `warm`. An exception
        (targets.Timeout) leaves the samples taken before it."""
        t0 = time.perf_counter()
        try:
            if warm:
                self.call()
            before = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw
            self.meter.start()
            t1 = time.perf_counter()
            try:
                for _ in range(self.inner):
                    self.call()
                self.timing.samples.append((time.perf_counter() - t1) / self.inner)
            finally:
                self.meter.pause()
                self.switches += resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw - before
        finally:
            self.spent += time.perf_counter() - t0

    def cut_short(self, limit: float) -> None:
        """Notes that the time limit stopped this target's samples."""
        self.timing.note = (f"{len(self.timing.samples)} of {self.n} samples (time limit "
                            f"{limit:.3g} s)")
        self.n = len(self.timing.samples)

    def finish(self) -> Timing:
        t = self.timing
        t.others_cores = self.meter.stop()
        # a thread of this process that blocked (a team asleep after its spin
        # ran out): on an idle machine a warm parallel call blocks about
        # never; hundreds a call mean its cores were taken
        t.sleeps = self.switches / max(len(t.samples) * self.inner, 1)
        return t


def measure(call, estimate: float, *, repeats: int = 5, min_sample: float = 0.02,
            budget: float = 30.0, limit: float | None = None) -> Timing:
    """Times `call` after warm-up, its samples back to back; `estimate` is
    the duration of one warm call. `limit` (seconds) cuts the measurement
    short (targets.time_limit): the samples finished by then are kept, and
    with none it raises Timeout."""
    from .targets import Timeout, time_limit
    s = Sampler(call, estimate, repeats=repeats, min_sample=min_sample, budget=budget)
    try:
        with time_limit(limit):
            while s.wants():
                s.sample()
    except Timeout:
        if not s.timing.samples:
            raise
        s.cut_short(limit)
    return s.finish()
