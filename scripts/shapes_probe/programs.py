"""Programs in the shapes issue 17 named as losing (a 3-D stencil with fixed
faces, a clamped image filter with two reductions per step, a Monte-Carlo
pricer with per-path arrays, a two-layer network's forward pass, ten
elementwise steps in a loop of maps, 4096 small matmuls, a frontier BFS
with a filter and a scatter per level), written the way a
Python user would write them, not shaped for PyShark. scripts/shapes_probe.py
times them against the Numba peers in numba_peers.py."""
import pyshark.prelude as ps

Grid3 = ps.Array[ps.Array[ps.Array[ps.f32]]]
Img = ps.Array[ps.Array[ps.f32]]


@ps.entry
def heat3d(u: Grid3, steps: int) -> Grid3:
    """Jacobi steps of the 3-D heat equation; the six faces stay fixed."""
    n = len(u)
    for _ in range(steps):
        u = [[[u[i][j][k] if i == 0 or j == 0 or k == 0 or i == n - 1 or j == n - 1 or k == n - 1
               else u[i][j][k] + 0.1 * (u[i - 1][j][k] + u[i + 1][j][k] + u[i][j - 1][k]
                                        + u[i][j + 1][k] + u[i][j][k - 1] + u[i][j][k + 1]
                                        - 6.0 * u[i][j][k])
               for k in range(n)] for j in range(n)] for i in range(n)]
    return ps.array(u)


@ps.entry
def blur_normalise(img: Img, steps: int) -> Img:
    """A 5-point blur with clamped edges, then the image stretched to [0, 1]
    by its minimum and maximum, each step."""
    h = len(img)
    w = len(img[0])
    for _ in range(steps):
        b = ps.tabulate_2d(h, w, lambda i, j: (img[max(i - 1, 0), j] + img[min(i + 1, h - 1), j]
                                                + img[i, max(j - 1, 0)] + img[i, min(j + 1, w - 1)]
                                                + img[i, j]) / 5.0)
        lo = min(ps.map(lambda row: ps.minimum(row), b))
        hi = max(ps.map(lambda row: ps.maximum(row), b))
        img = ps.map(lambda row: ps.map(lambda x: (x - lo) / (hi - lo + 1e-6), row), b)
    return img


def hash01(p: int, t: int) -> ps.f64:
    """A uniform number in (0, 1) from the pair (p, t) (a 64-bit mix)."""
    z = ps.u64(p) * 6364136223846793005 + ps.u64(t) * 1442695040888963407 + 1
    z = (z ^ (z >> 33)) * 0xff51afd7ed558ccd
    z = z ^ (z >> 33)
    return (ps.f64(z >> 11) + 0.5) / 9007199254740992.0


@ps.entry
def asian_option(npaths: int, nsteps: int, s0: float, strike: float, sigma: float) -> float:
    """Monte-Carlo price of an arithmetic-average Asian call: each path an
    array of log-price increments, scanned, averaged."""
    dt = 1.0 / nsteps

    def payoff(p: int) -> float:
        incs = [sigma * ps.sqrt(dt) * (hash01(p, t) - 0.5) * 3.4641016151377544 - 0.5 * sigma * sigma * dt
                for t in range(nsteps)]
        logs = ps.scan(lambda a, b: a + b, 0.0, incs)
        avg = sum([s0 * ps.exp(x) for x in logs]) / ps.f64(nsteps)
        return max(avg - strike, 0.0)

    return sum([payoff(p) for p in range(npaths)]) / ps.f64(npaths)


@ps.entry
def mlp_forward(x: Img, w1: Img, b1: ps.Array[ps.f32], w2: Img, b2: ps.Array[ps.f32]) -> Img:
    """relu(x w1 + b1) w2 + b2, then a softmax per row."""
    w1t = ps.transpose(w1)
    w2t = ps.transpose(w2)
    hid = [[ps.max(sum([a * b for a, b in zip(row, col)]) + bias, 0.0) for col, bias in zip(w1t, b1)]
           for row in x]
    out = [[sum([a * b for a, b in zip(row, col)]) + bias for col, bias in zip(w2t, b2)]
           for row in hid]
    res = [[ps.exp(v - max(row)) / sum([ps.exp(u - max(row)) for u in row]) for v in row]
           for row in out]
    return ps.array(res)


@ps.entry
def particles(x: ps.Array[ps.f32], v: ps.Array[ps.f32], steps: int) -> ps.Array[ps.f32]:
    """Ten (or `steps`) elementwise updates of a particle system, a map per
    step over all particles."""
    for _ in range(steps):
        v = ps.map(lambda xi, vi: vi * 0.99 - 0.01 * xi, x, v)
        x = ps.map(lambda xi, vi: xi + 0.1 * vi, x, v)
    return ps.map(lambda xi, vi: xi + vi, x, v)


@ps.entry
def small_matmuls(a: Grid3, b: Grid3) -> Grid3:
    """Independent n x n products, one per pair."""
    return ps.array([[[sum([aa[i][k] * bb[k][j] for k in range(len(bb))])
                       for j in range(len(bb[0]))] for i in range(len(aa))]
                     for aa, bb in zip(a, b)])


@ps.entry
def bfs(src: ps.Array[int], dst: ps.Array[int], n: int, source: int) -> ps.Array[int]:
    """Breadth-first levels from `source` over the edge list src[e] -> dst[e]
    (-1: unreachable): each level filters the edges that leave the frontier
    for an unvisited node and scatters the level into their targets."""
    dist = ps.update(ps.replicate(n, -1), source, 0)
    level = 0
    changed = True
    while changed:
        hits = ps.filter(lambda e: dist[src[e]] == level and dist[dst[e]] == -1,
                         ps.iota(len(src)))
        targets = ps.map(lambda e: dst[e], hits)
        dist = ps.scatter(dist, targets, ps.replicate(len(targets), level + 1))
        changed = len(targets) > 0
        level += 1
    return dist
