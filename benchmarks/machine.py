"""The machine under test: is it idle, what is its copy bandwidth and peak FLOP rate.

The copy bandwidth is the yardstick for streaming kernels (a kernel that
reads and writes its bytes once cannot beat a copy); the peak FLOP rate is
estimated by a large float32 matrix product through NumPy's BLAS, the
fastest code on the machine for that, so it is a measured lower bound of
the true peak rather than a datasheet figure.
"""
from __future__ import annotations

import os
import platform
import time

import numpy as np


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _cpu_times():
    """(busy, total) jiffies of the whole machine, from /proc/stat (None elsewhere)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


class OthersMeter:
    """How many cores other processes kept busy while a measurement ran.

    Machine-wide busy time from /proc/stat minus this process's own CPU time;
    on a machine shared with other work this is what makes a timing suspect.
    start() and pause() may alternate: the intervals between them add up
    (a target's samples, interleaved with other targets').
    """

    def __init__(self):
        self._start = None
        self._busy = self._own = self._wall = 0.0
        self._known = True

    def start(self):
        self._start = (_cpu_times(), time.process_time(), time.perf_counter())
        return self

    def pause(self) -> None:
        (machine0, own0, wall0), machine1 = self._start, _cpu_times()
        self._wall += time.perf_counter() - wall0
        self._own += time.process_time() - own0
        if machine0 is None or machine1 is None:
            self._known = False
        else:
            self._busy += (machine1[0] - machine0[0]) / os.sysconf("SC_CLK_TCK")
        self._start = None

    def stop(self) -> float | None:
        """Cores other processes used, over all the intervals measured."""
        if self._start is not None:
            self.pause()
        if not self._known or self._wall <= 0.05:     # /proc/stat counts in 10 ms ticks
            return None
        return max(0.0, (self._busy - self._own) / self._wall)


def settle(max_wait: float = 2.0, window: float = 0.02, quiet: float = 0.2) -> float:
    """Waits until the other threads of this process use under `quiet`
    cores over `window` seconds (at most `max_wait`); returns the seconds
    waited. The peers share the process: NumPy's OpenBLAS workers spin for
    a while after each call, and on the H100 machine's 16-core host a
    PyShark or Numba region that began then waited for its descheduled
    threads (backprop at 2^16 inputs: 0.17 ms alone, 0.7-1.7 ms 0.05-0.1 s
    after a NumPy call; benchmarks/README.md, "Session 26"). The runner
    settles before timing each target, so none is timed in another's wake."""
    start = time.perf_counter()
    while time.perf_counter() - start < max_wait:
        cpu0, t0 = time.process_time(), time.perf_counter()
        time.sleep(window)
        if (time.process_time() - cpu0) / max(time.perf_counter() - t0, 1e-9) < quiet:
            break
    return time.perf_counter() - start


def idle_check(seconds: float = 1.0, max_others: float = 0.25) -> tuple[bool, str]:
    """(idle, message): the load average and what other processes use over `seconds`."""
    load1 = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    meter = OthersMeter().start()
    time.sleep(seconds)
    others = meter.stop()
    n = cpu_count()
    busy = (others is not None and others > max_others) or load1 > max(0.5, 0.25 * n)
    text = f"load average {load1:.2f} on {n} cores"
    if others is not None:
        text += f"; other processes used {others:.2f} cores over the last {seconds:.0f} s"
    return not busy, text


def wait_until_idle(timeout: float, say=print) -> tuple[bool, str]:
    """Checks for idleness until it holds or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    idle, text = idle_check()
    while not idle and time.monotonic() < deadline:
        say(f"waiting for the machine to become idle: {text}")
        time.sleep(min(10.0, max(0.0, deadline - time.monotonic())))
        idle, text = idle_check()
    return idle, text


def _best_of(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def copy_bandwidth(nbytes: int = 256 << 20, repeats: int = 5) -> dict:
    """GB/s of copying nbytes (read + write counted), by NumPy (one thread) and,
    when Numba imports, by a parallel loop over every core; `best` is the larger."""
    n = nbytes // 4
    src = np.ones(n, np.float32)
    dst = np.empty_like(src)
    out = {"numpy_copy": 2 * nbytes / _best_of(lambda: np.copyto(dst, src), repeats) / 1e9}
    try:
        from numba import njit, prange

        @njit(parallel=True)
        def parallel_copy(d, s):
            for i in prange(len(s)):
                d[i] = s[i]

        parallel_copy(dst[:16], src[:16])
        out["parallel_copy"] = 2 * nbytes / _best_of(lambda: parallel_copy(dst, src),
                                                     repeats) / 1e9
    except ImportError:
        pass
    out["best"] = max(out.values())
    out["bytes"] = nbytes
    return out


def peak_gflops(n: int = 2048, repeats: int = 3) -> dict:
    """GFLOP/s of an n x n float32 matrix product by NumPy's BLAS (2 n^3 flops)."""
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    a @ b
    return {"sgemm": 2 * n ** 3 / _best_of(lambda: a @ b, repeats) / 1e9, "n": n}


def gpu_copy_bandwidth(nbytes: int = 1 << 30, repeats: int = 10) -> dict | None:
    """Device-to-device copy GB/s through CuPy (None without CuPy or a GPU)."""
    try:
        import cupy
        src = cupy.ones(nbytes // 4, cupy.float32)
        dst = cupy.empty_like(src)
        cupy.cuda.Device().synchronize()

        def copy():
            dst[...] = src
            cupy.cuda.Device().synchronize()

        copy()
        return {"cupy_copy": 2 * nbytes / _best_of(copy, repeats) / 1e9,
                "device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()}
    except Exception:
        return None


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return None


def versions() -> dict:
    out = {"python": platform.python_version(), "numpy": np.__version__}
    for name in ("numba", "cupy", "llvmlite", "pyopencl"):
        try:
            out[name] = __import__(name).__version__
        except Exception:
            pass
    import pyshark
    out["pyshark"] = pyshark.__version__
    return out


def describe() -> dict:
    """What the results were measured on."""
    return {"cpu": cpu_model(), "cores": cpu_count(), "memory_gib": memory_gib(),
            "platform": platform.platform(), "versions": versions()}
