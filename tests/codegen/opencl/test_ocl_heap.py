"""Work-item heaps (emit_cl.heap_alloc): a ParFor body that allocates sizes
only it knows runs as a kernel; a heap too small reports HEAP_FULL with what
it needed, the backend grows the heaps and runs the entry again, and LIFO
frees give memory back within a work-item."""
from __future__ import annotations

import textwrap

import pytest

from ocl_harness import I0, I64, K, P, build, c64, np, v
from pyshark.codegen.opencl.emit_cl import HEAP_FULL, HEAP_HEADER

i, n, j, r = v("i", I64), v("n", I64), v("j", I64), v("r", I64)


def _summing(rounds: int, size_of_i: K.Expr):
    """out[i] = sum over `rounds` rounds of sum(t[0..c)) where t = alloc(c),
    t[k] = k + i, freed at the end of each round (c from size_of_i)."""
    out, t, c, acc, k = v("out", P(I64)), v("t", P(I64)), v("c", I64), v("acc", I64), v("k", I64)
    rnd = K.Block((
        K.Alloc(t, c),
        K.For(k, I0, c, K.Block((K.Store(t, k, K.Bin("add", k, i)),))),
        K.For(k, I0, c, K.Block((K.Set(acc, K.Bin("add", acc, K.Load(t, k))),))),
        K.Free(t),
    ))
    body = K.Block((K.Set(c, size_of_i), K.Set(acc, I0), K.For(r, I0, c64(rounds), rnd),
                    K.Store(out, i, acc)))
    return K.Module([K.Function("f", (out, n), K.Block((K.ParFor(i, n, body),)))])


def _want(count, rounds, size):
    return [rounds * sum(k + x for k in range(size(x))) for x in range(count)]


def test_a_heap_too_small_reports_what_it_needed():
    b = build(_summing(1, K.Bin("mul", i, c64(1000))))
    assert b.host.host_parfors == 0 and b.host.kernels[0].heap
    o = np.zeros(5, np.int64)
    code, msg, args = b.call("f", o, np.int64(5), heap_stride=4096)
    assert code == HEAP_FULL and msg == -1
    assert args[0] > 4096 and args[0] % 16 == 0
    assert b.call("f", o, np.int64(5), heap_stride=64 << 10) is None
    assert o.tolist() == _want(5, 1, lambda x: 1000 * x)


def test_lifo_frees_reuse_the_heap():
    """Ten rounds of a 8000-byte block each fit a heap of one block."""
    b = build(_summing(10, c64(1000)))
    o = np.zeros(3, np.int64)
    assert b.call("f", o, np.int64(3), heap_stride=8000 + HEAP_HEADER + 16) is None
    assert o.tolist() == _want(3, 10, lambda x: 1000)


SOURCE = textwrap.dedent('''
    import pyshark.prelude as ps

    @ps.entry
    def peaks(ks: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
        """The largest prefix sum of 0, 1, ..., k - 1 for each k (a scan of
        a size only the element knows, inside a map)."""
        return ps.map(lambda k: ps.reduce(lambda a, b: max(a, b), 0,
                                          ps.scan(lambda a, b: a + b, 0, ps.iota(k))), ks)
''')


def test_the_backend_grows_the_heaps_and_agrees_with_python_mode(tmp_path):
    from pyshark import Wrapper
    from pyshark.codegen.opencl import runtime
    if not runtime.available():
        pytest.skip("no OpenCL device")
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    py = Wrapper("python").add_source_file(path).compile_and_load()
    w = Wrapper("opencl", cache_dir=tmp_path / "c").add_source_file(path).compile_and_load()
    ks = np.array([0, 1, 5, 20000, 3, 70000], np.int64)     # 70000 * 8 bytes > the first heap
    (mod, _), = [w._entries["peaks"]]
    heap = mod.heap
    first = heap["stride"]
    assert np.array_equal(w.peaks(ks), py.peaks(ks))
    assert heap["stride"] >= 8 * 70000 > first                  # grown, and kept
    grown = heap["stride"]
    assert np.array_equal(w.peaks(ks[:4]), py.peaks(ks[:4])) and heap["stride"] == grown
