"""What the session-32 probe scripts share: the best time of back-to-back
calls, and a copy of an array at a chosen offset modulo 4 KiB."""
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
