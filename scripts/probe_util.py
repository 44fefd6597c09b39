"""What the probe scripts share: the best time of back-to-back calls, an
ABBA comparison of two calls, and a copy of an array at a chosen offset
modulo 4 KiB."""
import time

import numpy as np


def best_ms(f, *args, windows: int = 5, window_s: float = 0.03) -> float:
    """Milliseconds a call of f(*args): one warm-up call, then the fastest
    of `windows` windows of back-to-back calls, each window_s long."""
    f(*args)
    m = 1e9
    for _ in range(windows):
        t0 = time.perf_counter()
        k = 0
        while time.perf_counter() - t0 < window_s:
            f(*args)
            k += 1
        m = min(m, (time.perf_counter() - t0) / k)
    return m * 1e3


def placed(a: np.ndarray, off: int, keep: list) -> np.ndarray:
    """A copy of `a` that starts `off` bytes past a 4 KiB boundary (its
    buffer appended to `keep`, which must outlive it)."""
    buf = np.empty(a.nbytes + 8192, np.uint8)
    keep.append(buf)
    base = (-buf.ctypes.data) % 4096
    v = buf[base + off: base + off + a.nbytes].view(a.dtype).reshape(a.shape)
    v[...] = a
    return v


def ab(fa, fb, rounds: int = 40, reps: int = 3) -> tuple[float, float, float]:
    """(median ms of fa, of fb, median per-round ratio fa/fb): rounds of the
    best of `reps` calls each, the order alternating (ABBA), so that a slow
    stretch of the machine falls on both."""
    import statistics
    ta, tb, ratios = [], [], []
    for r in range(rounds):
        res = {}
        for f in ((fa, fb) if r % 2 == 0 else (fb, fa)):
            best = 1e9
            for _ in range(reps):
                t0 = time.perf_counter()
                f()
                best = min(best, time.perf_counter() - t0)
            res[f] = best
        ta.append(res[fa])
        tb.append(res[fb])
        ratios.append(res[fa] / res[fb])
    return statistics.median(ta) * 1e3, statistics.median(tb) * 1e3, statistics.median(ratios)
