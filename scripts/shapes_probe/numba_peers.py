"""Numba peers of programs.py, written for speed (parallel=True, plain
loops, buffers reused), computing the same values."""
import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=False)
def heat3d(u, steps):
    n = u.shape[0]
    a = u.copy()
    b = u.copy()                    # faces stay as they are in both buffers
    for _ in range(steps):
        for i in prange(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    c = a[i, j, k]
                    b[i, j, k] = c + np.float32(0.1) * (a[i - 1, j, k] + a[i + 1, j, k] + a[i, j - 1, k]
                                                        + a[i, j + 1, k] + a[i, j, k - 1] + a[i, j, k + 1]
                                                        - np.float32(6.0) * c)
        a, b = b, a
    return a


@njit(parallel=True, cache=False)
def blur_normalise(img, steps):
    h, w = img.shape
    a = img.copy()
    b = np.empty_like(img)
    for _ in range(steps):
        for i in prange(h):
            im, ip = max(i - 1, 0), min(i + 1, h - 1)
            for j in range(w):
                b[i, j] = (a[im, j] + a[ip, j] + a[i, max(j - 1, 0)] + a[i, min(j + 1, w - 1)]
                           + a[i, j]) / np.float32(5.0)
        lo = b.min()
        hi = b.max()
        d = hi - lo + np.float32(1e-6)
        for i in prange(h):
            for j in range(w):
                a[i, j] = (b[i, j] - lo) / d
    return a


@njit(cache=False)
def _hash01(p, t):
    z = np.uint64(p) * np.uint64(6364136223846793005) + np.uint64(t) * np.uint64(1442695040888963407) \
        + np.uint64(1)
    z = (z ^ (z >> np.uint64(33))) * np.uint64(0xff51afd7ed558ccd)
    z = z ^ (z >> np.uint64(33))
    return (np.float64(z >> np.uint64(11)) + 0.5) / 9007199254740992.0


@njit(parallel=True, cache=False)
def asian_option(npaths, nsteps, s0, strike, sigma):
    dt = 1.0 / nsteps
    total = 0.0
    for p in prange(npaths):
        x = 0.0
        acc = 0.0
        for t in range(nsteps):
            x += sigma * np.sqrt(dt) * (_hash01(p, t) - 0.5) * 3.4641016151377544 - 0.5 * sigma * sigma * dt
            acc += s0 * np.exp(x)
        total += max(acc / nsteps - strike, 0.0)
    return total / npaths


@njit(parallel=True, cache=False)
def mlp_forward(x, w1, b1, w2, b2):
    bsz = x.shape[0]
    hdim = w1.shape[1]
    odim = w2.shape[1]
    out = np.empty((bsz, odim), np.float32)
    for r in prange(bsz):
        hid = np.zeros(hdim, np.float32)
        for k in range(x.shape[1]):
            xv = x[r, k]
            for h in range(hdim):
                hid[h] += xv * w1[k, h]
        for h in range(hdim):
            hid[h] = max(hid[h] + b1[h], np.float32(0.0))
        o = np.zeros(odim, np.float32)
        for h in range(hdim):
            hv = hid[h]
            for c in range(odim):
                o[c] += hv * w2[h, c]
        m = -np.inf
        for c in range(odim):
            o[c] += b2[c]
            m = max(m, o[c])
        s = np.float32(0.0)
        for c in range(odim):
            o[c] = np.exp(o[c] - m)
            s += o[c]
        for c in range(odim):
            out[r, c] = o[c] / s
    return out


@njit(parallel=True, cache=False)
def particles(x, v, steps):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        xi, vi = x[i], v[i]
        for _ in range(steps):
            vi = vi * np.float32(0.99) - np.float32(0.01) * xi
            xi = xi + np.float32(0.1) * vi
        out[i] = xi + vi
    return out


@njit(parallel=True, cache=False)
def small_matmuls(a, b):
    m, n, _ = a.shape
    p = b.shape[2]
    out = np.zeros((m, n, p), np.float32)
    for q in prange(m):
        for i in range(n):
            for k in range(b.shape[1]):
                av = a[q, i, k]
                for j in range(p):
                    out[q, i, j] += av * b[q, k, j]
    return out


@njit(parallel=True, cache=False)
def bfs(src, dst, n, source):
    dist = np.full(n, -1, np.int64)
    dist[source] = 0
    m = len(src)
    hit = np.empty(m, np.bool_)
    level = 0
    changed = True
    while changed:
        for e in prange(m):
            hit[e] = dist[src[e]] == level and dist[dst[e]] == -1
        changed = False
        for e in range(m):
            if hit[e]:
                dist[dst[e]] = level + 1
                changed = True
        level += 1
    return dist
