"""iter_stms visits statements nested in branches, loops and SOAC lambdas."""
from pyshark.core import ir
from pyshark.core.traverse import iter_stms
from pyshark.translate import translate_source

SRC = '''
import pyshark.prelude as ps

def inc(x: int) -> int:
    return x + 1

@ps.entry
def f(xs: ps.Array[int], n: int) -> int:
    total = 0
    for i in range(n):
        if i > 2:
            total = total + inc(i)
    while total > 100:
        total = total - inc(1)
    return total + ps.sum(ps.map(lambda x: inc(x), xs))
'''


def test_iter_stms_reaches_every_nested_call():
    fun = translate_source(SRC, "t.py").functions["f"]
    calls = [s for s in iter_stms(fun.body) if isinstance(s.exp, ir.Call)]
    # one inside if-in-for, one inside the while body, one inside the map lambda
    assert len(calls) == 3
    assert {c.exp.fn for c in calls} == {"inc"}
    top_level = [s for s in fun.body.stms if isinstance(s.exp, ir.Call)]
    assert top_level == []
