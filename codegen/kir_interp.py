"""A reference interpreter of the kernel IR (codegen/kir.py) in Python + numpy.

A test oracle for the lowering (core IR -> kernel IR), before and beside the
native backends. It gives every primitive the meaning kir.py states, on numpy
scalars of the exact dtype, and it is strict where native code would go
silently wrong. A compiler bug raises a Python exception:

- KirMemoryError: a Load/Store/CopyMem out of its buffer, use after Free,
  double free, free of memory the entry did not allocate or of an interior
  pointer, a ParFor body freeing a block it did not allocate (kir.py: a
  failing entry frees what each function still holds), a null or
  uninitialised pointer used, overlapping CopyMem, a bool byte that is
  neither 0 nor 1 (uninitialised memory);
- KirPreconditionError: integer div/rem by zero or MIN / -1, a shift amount
  outside [0, bits), POISON (an out-of-range float -> int Cast) used
  anywhere but in a Sel's arm, a variable or another Bin/Un/Cast;
- KirInterpError (their base): a variable read before it is set, a ParFor
  body or a For body setting a variable it must not, a nested ParFor.

A Fail is a result, not an exception; as kir.py says, the failing entry
frees what it still holds, so `leaks()` of a failed call is []. Usage:

    xs = Buffer(np.arange(10.0))             # a pointer to element 0 of xs
    out = Buffer.pointers(1)                 # a **f64 out-param, holding null
    r = run_function(module, "f", [np.int64(10), xs, out], nthreads=3)
    r.code, r.message                        # 0, "" -- or ERROR_CODES[kind], text
    out.array[0].values(10)                  # what the entry allocated and stored
    r.leaks(), r.dangling()                  # [] and [] for a correct lowering

Alloc fills its memory with 0xCD bytes (pointer arrays with UNINIT), so a
read of uninitialised memory shows up. ParFor runs its iterations in
`nthreads` contiguous chunks, chunks and iterations in a shuffled order
(`order="reverse"` or `"forward"` also), each iteration with a fresh copy of
the captured variables.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from pyshark.core.types import ScalarType

from . import kir as K
from .kir_check import check_function


class KirInterpError(Exception):
    """The kernel IR broke a rule of kir.py while running (a compiler bug)."""


class KirMemoryError(KirInterpError):
    """An invalid memory operation (out of bounds, use after free, ...)."""


class KirPreconditionError(KirInterpError):
    """A primitive's precondition (div/rem/shl/shr) does not hold."""


class _Uninit:
    def __repr__(self) -> str:
        return "UNINIT"


UNINIT = _Uninit()          # the contents of a freshly allocated pointer array
GARBAGE_BYTE = 0xCD         # the contents of a freshly allocated scalar array
OUT_OF_MEMORY = "out of memory: cannot allocate {} elements"


class Buffer:
    """A pointer: `array` (a 1-D numpy array, the whole block of memory) and
    an element `offset` into it. Pointer arrays have object dtype and hold
    Buffers, None (null) or UNINIT."""
    __slots__ = ("array", "offset")

    def __init__(self, array: np.ndarray, offset: int = 0):
        if not isinstance(array, np.ndarray) or array.ndim != 1:
            raise TypeError(f"a Buffer wraps a 1-D numpy array, not {array!r}")
        self.array = array
        self.offset = int(offset)

    @classmethod
    def pointers(cls, n: int = 1) -> "Buffer":
        """A pointer array of n null pointers (for *(*T) out-params)."""
        return cls(np.full(n, None, dtype=object))

    def values(self, count: Optional[int] = None) -> np.ndarray:
        """A view of array[offset : offset + count] (to the end when None)."""
        end = len(self.array) if count is None else self.offset + count
        return self.array[self.offset:end]

    def __repr__(self) -> str:
        return f"Buffer({self.array.dtype}[{len(self.array)}]@{id(self.array):x}+{self.offset})"


@dataclass
class KirResult:
    """The outcome of one call: `code` 0 or ERROR_CODES[kind], `msg` the
    message index (-1: none; also for a failed Alloc), `args` the Fail's i64
    arguments, `message` the formatted text ("" on success)."""
    code: int
    msg: int
    args: list
    message: str
    _allocs: dict = field(default_factory=dict, repr=False)
    _freed: set = field(default_factory=set, repr=False)
    _roots: list = field(default_factory=list, repr=False)

    def _reachable(self) -> dict:
        seen: dict = {}
        stack = [b.array for b in self._roots if isinstance(b, Buffer)]
        while stack:
            a = stack.pop()
            if id(a) in seen:
                continue
            seen[id(a)] = a
            if a.dtype == object and id(a) not in self._freed:
                stack.extend(p.array for p in a if isinstance(p, Buffer))
        return seen

    def leaks(self) -> list:
        """Buffers Alloc'ed during the call, neither freed nor reachable from
        a pointer argument (through pointer arrays)."""
        reach = self._reachable()
        return [Buffer(a) for i, a in self._allocs.items()
                if i not in self._freed and i not in reach]

    def dangling(self) -> list:
        """Freed buffers still reachable from a pointer argument."""
        return [Buffer(a) for i, a in self._reachable().items() if i in self._freed]


def leaks(result: KirResult) -> list:
    """The buffers a call leaked (see KirResult.leaks)."""
    return result.leaks()


class _Failure(Exception):
    def __init__(self, code: int, msg: int, args: list):
        super().__init__(code, msg, args)
        self.code, self.msg, self.args_ = code, msg, args


# ---------------------------------------------------------------------------
# Scalar primitives


_LIBM_NAMES = ("exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan",
               "sinh", "cosh", "tanh", "pow", "atan2")


def _libm_table() -> dict:
    """(op, numpy float type) -> the C math library function (`sin`, `sinf`,
    ...) on numpy scalars, as kir.py specifies; {} without a libm (numpy's
    ufuncs then stand in, within a few ulps)."""
    path = ctypes.util.find_library("m")
    if path is None:
        return {}
    lib, table = ctypes.CDLL(path), {}
    for name in _LIBM_NAMES:
        for suffix, ctype, nptype in (("", ctypes.c_double, np.float64),
                                      ("f", ctypes.c_float, np.float32)):
            fn = getattr(lib, name + suffix)
            fn.restype, fn.argtypes = ctype, [ctype] * (2 if name in ("pow", "atan2") else 1)
            table[name, nptype] = lambda *a, fn=fn, nptype=nptype: nptype(fn(*map(float, a)))
    return table


_LIBM = _libm_table()


class _Poison:
    """kir.py's POISON, the value of an out-of-range float -> int Cast:
    Bin/Un/Cast of it give it back (e_bin, e_un, e_cast), a Sel passes it
    through an arm and a variable holds it; any other use raises (bool(),
    int() and the Store check)."""

    def use(self, *_):
        raise KirPreconditionError("poison (an out-of-range float -> int Cast) is used")

    __bool__ = __int__ = __index__ = __float__ = use

    def __repr__(self) -> str:
        return "POISON"


POISON = _Poison()


_SIGNED_MIN = {np.dtype(t): int(np.iinfo(t).min) for t in (np.int8, np.int16, np.int32,
                                                                np.int64)}


def _violated(op: str, x, y):
    raise KirPreconditionError(f"integer {op} of {int(x)} by {int(y)} ({x.dtype})")


# int_div and int_rem are host code's too (hostprims.idiv/irem): no lookups
def int_div(x, y):
    """kir's integer div: C's truncating x / y (precondition checked)."""
    xi, yi = int(x), int(y)
    if yi == 0 or (yi == -1 and xi == _SIGNED_MIN.get(x.dtype)):
        _violated("div", x, y)
    q = abs(xi) // abs(yi)
    return type(x)(q if (xi < 0) == (yi < 0) else -q)


def int_rem(x, y):
    """kir's integer rem: C's x % y, the sign of x (precondition checked)."""
    xi, yi = int(x), int(y)
    if yi == 0 or (yi == -1 and xi == _SIGNED_MIN.get(x.dtype)):
        _violated("rem", x, y)
    r = abs(xi) % abs(yi)
    return type(x)(-r if xi < 0 else r)


def _shift(op: str, ufunc):
    def shift(x, y):
        if not 0 <= int(y) < x.dtype.itemsize * 8:
            raise KirPreconditionError(f"{op} of {x} by {y} ({x.dtype}): amount out of range")
        return ufunc(x, y)
    return shift


def _libm2(op: str, ufunc):
    def call(x, y):
        f = _LIBM.get((op, x.dtype.type))
        return f(x, y) if f else ufunc(x, y)
    return call


def _libm1(op: str, ufunc):
    def call(x):
        f = _LIBM.get((op, x.dtype.type))
        return f(x) if f else ufunc(x)
    return call


# The meaning of every (primitive, class) of kir.BIN_CLASSES / UN_CLASSES
# on numpy scalars of one dtype (numpy's scalar arithmetic is the machine's
# under np.errstate(all="ignore"): ints wrap, floats are IEEE).
BIN_IMPL = {
    **{(op, c): f for op, f in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply))
       for c in "fsu"},
    ("div", "f"): np.divide, ("rem", "f"): np.fmod,
    **{(op, c): f for op, f in (("div", int_div), ("rem", int_rem)) for c in "su"},
    **{(op, c): f for op, f in (("and", np.bitwise_and), ("or", np.bitwise_or),
                                ("xor", np.bitwise_xor)) for c in "sub"},
    **{(op, c): _shift(op, f) for op, f in (("shl", np.left_shift), ("shr", np.right_shift))
       for c in "su"},
    ("pow", "f"): _libm2("pow", np.power), ("atan2", "f"): _libm2("atan2", np.arctan2),
    ("min", "f"): np.minimum, ("max", "f"): np.maximum,
    ("fmin", "f"): np.fmin, ("fmax", "f"): np.fmax,
    **{(op, c): f for op, f in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                                ("le", np.less_equal), ("gt", np.greater),
                                ("ge", np.greater_equal)) for c in "fsub"},
}
_UN_UFUNC = {
    "fabs": np.fabs, "sqrt": np.sqrt, "exp": np.exp, "log": np.log, "log2": np.log2,
    "log10": np.log10, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint, "isnan": np.isnan,
}
UN_IMPL = {
    **{("neg", c): np.negative for c in "fsu"}, **{("not", c): np.invert for c in "sub"},
    **{(op, "f"): (_libm1(op, f) if op in _LIBM_NAMES else f) for op, f in _UN_UFUNC.items()},
}


def _float_to_int(x, to: ScalarType):
    """C's conversion, truncation toward zero, where it fits; POISON else."""
    f = float(x)
    if math.isfinite(f):
        v = math.trunc(f)
        lo = -(1 << (to.bits - 1)) if to.is_signed else 0
        if lo <= v < lo + (1 << to.bits):
            return to.numpy_type(v)
    return POISON


CAST_IMPL = {
    **{pair: (lambda x, to: x.astype(to.dtype)) for pair in K.CAST_CLASSES},
    ("f", "s"): _float_to_int, ("f", "u"): _float_to_int,
    **{(c, "b"): (lambda x, to: np.bool_(x != 0)) for c in "fsu"},
}


def _cls(x) -> str:
    k = x.dtype.kind
    return "s" if k == "i" else k if k in "fu" else "b"


def cast(x, to: ScalarType):
    """The value of kir.Cast(to, x) for a numpy scalar x (POISON: an
    out-of-range float -> int)."""
    if x.dtype == to.dtype:
        return x
    return CAST_IMPL[_cls(x), K.scalar_class(to)](x, to)


def bin_prim(op: str, x, y):
    """The value of kir.Bin(op, x, y) for numpy scalars of one dtype."""
    f = BIN_IMPL.get((op, _cls(x)))
    if f is None:
        raise KirInterpError(f"{op} on {x.dtype} is not a kernel IR primitive")
    return f(x, y)


def un_prim(op: str, x):
    """The value of kir.Un(op, x) for a numpy scalar x."""
    f = UN_IMPL.get((op, _cls(x)))
    if f is None:
        raise KirInterpError(f"{op} on {x.dtype} is not a kernel IR primitive")
    return f(x)


# ---------------------------------------------------------------------------
# The interpreter


def _bad_pointer(p) -> str:
    return "a null pointer" if p is None else f"an uninitialised pointer ({p!r})"


_Y_MUST_BE_DEFINED = frozenset({"div", "rem", "shl", "shr"})


class _Interp:
    def __init__(self, nthreads: int, order: str, seed: int, max_alloc_bytes: int):
        self.nthreads, self.order, self.max_alloc_bytes = nthreads, order, max_alloc_bytes
        self.rng = np.random.default_rng(seed)
        self.allocs: dict = {}      # id(array) -> array, everything Alloc'ed
        self.freed: set = set()     # ids of freed arrays
        self.par_allocs: set = set()    # ids allocated in the running ParFor
        self.in_par = False

    # -- memory -------------------------------------------------------------

    def deref(self, p, what: str, i: int = 0, count: int = 1) -> int:
        """The array index of p[i : i + count], checked."""
        if not isinstance(p, Buffer):
            raise KirMemoryError(f"{what} through {_bad_pointer(p)}")
        if id(p.array) in self.freed:
            raise KirMemoryError(f"{what} through {p!r}, which was freed (use after free)")
        k = p.offset + i
        if count < 0 or k < 0 or k + count > len(p.array):
            raise KirMemoryError(f"{what} of elements [{k}, {k + count}) of {p!r}, "
                                 f"a block of {len(p.array)} elements (index {i})")
        return k

    # -- expressions --------------------------------------------------------

    def eval(self, e: K.Expr, env: dict):
        return self._EXPR[type(e)](self, e, env)

    def e_var(self, e, env):
        try:
            return env[e.name]
        except KeyError:
            raise KirInterpError(f"{e.name} read before it is set") from None

    def e_const(self, e, env):
        return e.type.numpy_type(e.value)

    def e_bin(self, e, env):
        x, y = self.eval(e.x, env), self.eval(e.y, env)
        if y is POISON and e.op in _Y_MUST_BE_DEFINED:
            y.use()                         # a divisor or shift amount
        if x is POISON or y is POISON:
            return POISON
        return bin_prim(e.op, x, y)

    def e_un(self, e, env):
        x = self.eval(e.x, env)
        return POISON if x is POISON else un_prim(e.op, x)

    def e_cast(self, e, env):
        x = self.eval(e.x, env)
        if x is POISON:
            return POISON
        if e.bits:
            return x.view(e.to.dtype)
        return cast(x, e.to)

    def e_sel(self, e, env):
        c, x, y = self.eval(e.cond, env), self.eval(e.x, env), self.eval(e.y, env)
        return x if c else y

    def e_load(self, e, env):
        p = self.eval(e.ptr, env)
        k = self.deref(p, "load", int(self.eval(e.index, env)))
        if p.array.dtype == np.bool_:
            byte = int(p.array[k:k + 1].view(np.uint8)[0])
            if byte > 1:
                raise KirMemoryError(f"load of bool byte {byte:#x} at {k} of {p!r} "
                                     "(uninitialised memory)")
        return p.array[k]

    def e_ptradd(self, e, env):
        p = self.eval(e.ptr, env)
        if not isinstance(p, Buffer):
            raise KirMemoryError(f"pointer arithmetic on {_bad_pointer(p)}")
        return Buffer(p.array, p.offset + int(self.eval(e.offset, env)))

    def e_nthreads(self, e, env):
        return np.int64(self.nthreads)

    _EXPR = {K.KVar: e_var, K.KConst: e_const, K.Bin: e_bin, K.Un: e_un, K.Cast: e_cast,
             K.Sel: e_sel, K.Load: e_load, K.PtrAdd: e_ptradd, K.NumThreads: e_nthreads}

    # -- statements ---------------------------------------------------------
    # `frozen` maps the names this code must not set to the reason.

    def block(self, b: K.Block, env: dict, frozen: dict):
        for s in b.stms:
            self._STM[type(s)](self, s, env, frozen)

    def assign(self, var: K.KVar, value, env: dict, frozen: dict):
        if var.name in frozen:
            raise KirInterpError(f"{var.name} is set, but it is {frozen[var.name]}")
        env[var.name] = value

    def s_set(self, s, env, frozen):
        self.assign(s.var, self.eval(s.value, env), env, frozen)

    def s_store(self, s, env, frozen):
        p, i, v = (self.eval(x, env) for x in (s.ptr, s.index, s.value))
        if v is POISON:
            v.use()
        k = self.deref(p, "store", int(i))
        if p.array.dtype == object:
            if not (v is None or v is UNINIT or isinstance(v, Buffer)):
                raise KirInterpError(f"store of {v!r} into pointer memory {p!r}")
        elif getattr(v, "dtype", None) != p.array.dtype:
            raise KirInterpError(f"store of {v!r} into {p!r}")
        p.array[k] = v

    def s_alloc(self, s, env, frozen):
        count = int(self.eval(s.count, env))
        n = max(count, 0)
        elem = s.var.type.elem
        if isinstance(elem, K.Ptr):
            if n * 8 > self.max_alloc_bytes:
                raise _Failure(K.ERROR_CODES["MemoryError"], -1, [count])
            arr = np.full(n, UNINIT, dtype=object)
        else:
            if n * elem.dtype.itemsize > self.max_alloc_bytes:
                raise _Failure(K.ERROR_CODES["MemoryError"], -1, [count])
            arr = np.full(n * elem.dtype.itemsize, 0 if s.zeroed else GARBAGE_BYTE,
                          np.uint8).view(elem.dtype)
        self.allocs[id(arr)] = arr
        if self.in_par:
            self.par_allocs.add(id(arr))
        self.assign(s.var, Buffer(arr), env, frozen)

    def s_free(self, s, env, frozen):
        p = self.eval(s.ptr, env)
        if p is None:
            return                                  # C free(NULL)
        if not isinstance(p, Buffer):
            raise KirMemoryError(f"free of {_bad_pointer(p)}")
        if id(p.array) not in self.allocs:
            raise KirMemoryError(f"free of {p!r}, which this call did not allocate")
        if id(p.array) in self.freed:
            raise KirMemoryError(f"double free of {p!r}")
        if p.offset != 0:
            raise KirMemoryError(f"free of an interior pointer {p!r}")
        if self.in_par and id(p.array) not in self.par_allocs:
            raise KirMemoryError(f"a ParFor body frees {p!r}, which it did not allocate")
        self.freed.add(id(p.array))

    def s_copy(self, s, env, frozen):
        d, src = self.eval(s.dst, env), self.eval(s.src, env)
        n = int(self.eval(s.count, env))
        kd = self.deref(d, "copy to", 0, n)
        ks = self.deref(src, "copy from", 0, n)
        dv, sv = d.array[kd:kd + n], src.array[ks:ks + n]
        if n and np.shares_memory(dv, sv):
            raise KirMemoryError(f"copy of {n} elements between overlapping {d!r} and {src!r}")
        dv[...] = sv

    def s_if(self, s, env, frozen):
        self.block(s.then if self.eval(s.cond, env) else s.orelse, env, frozen)

    def s_for(self, s, env, frozen):
        lo, hi = int(self.eval(s.lo, env)), int(self.eval(s.hi, env))
        inner = {**frozen, s.var.name: "the counter of an enclosing For"}
        for i in range(lo, hi):
            self.assign(s.var, np.int64(i), env, frozen)
            self.block(s.body, env, inner)

    def s_while(self, s, env, frozen):
        while self.eval(s.cond, env):
            self.block(s.body, env, frozen)

    def s_fail(self, s, env, frozen):
        raise _Failure(K.ERROR_CODES[s.kind], s.msg, [int(self.eval(a, env)) for a in s.args])

    def shuffled(self, xs) -> list:
        xs = list(xs)
        if self.order == "reverse":
            return xs[::-1]
        if self.order == "shuffle":
            return [xs[j] for j in self.rng.permutation(len(xs))]
        return xs

    def s_atomic(self, s, env, frozen):
        # iterations run one at a time here, so the update is atomic
        self.assign(s.old, self.eval(K.Load(s.ptr, s.index), env), env, frozen)
        self.s_store(K.Store(s.ptr, s.index, s.value), env, frozen)

    def s_parfor(self, s, env, frozen):
        if self.in_par:
            raise KirInterpError("nested ParFor")
        if s.group_size is not None:
            raise KirInterpError("a work-group ParFor (GPU extension): the interpreter runs "
                                 "the mc/ family's kernels only")
        n = max(int(self.eval(s.count, env)), 0)
        par = s.parallel_if is None or bool(self.eval(s.parallel_if, env))
        k = self.nthreads if par and n > 1 else 1
        chunks = [range(c * n // k, (c + 1) * n // k) for c in range(k)]
        inner = {**frozen, **dict.fromkeys(env, "captured by a ParFor body"),
                 s.var.name: "a ParFor counter"}
        captured = dict(env)
        failure = None
        self.in_par = True
        self.par_allocs = set()
        try:
            for chunk in self.shuffled(chunks):
                for i in self.shuffled(chunk):
                    local = dict(captured)
                    local[s.var.name] = np.int64(i)
                    try:
                        self.block(s.body, local, inner)
                    except _Failure as f:
                        failure = failure or f      # the first failure wins
                        break                       # and its chunk stops
        finally:
            self.in_par = False
        if failure is not None:
            raise failure

    def s_prefetch(self, s, env, frozen):
        pass                            # a hint: any index, no effect

    _STM = {K.Set: s_set, K.Store: s_store, K.Alloc: s_alloc, K.Free: s_free,
            K.CopyMem: s_copy, K.Prefetch: s_prefetch, K.If: s_if, K.For: s_for,
            K.While: s_while, K.Fail: s_fail, K.ParFor: s_parfor, K.AtomicUpdate: s_atomic}


def _argument(p: K.KVar, a):
    """The interpreter's value of argument `a` for param `p`, type-checked."""
    if isinstance(p.type, K.Ptr):
        if isinstance(a, np.ndarray):
            a = Buffer(a)
        if a is None:
            return None
        want = np.dtype(object) if isinstance(p.type.elem, K.Ptr) else p.type.elem.dtype
        if not isinstance(a, Buffer) or a.array.dtype != want:
            raise TypeError(f"argument {p.name}: {p.type!r} needs a Buffer of {want}, got {a!r}")
        return a
    if isinstance(a, (Buffer, np.ndarray)) or (
            isinstance(a, np.generic) and a.dtype != p.type.dtype):
        raise TypeError(f"argument {p.name}: {p.type!r} needs a {p.type.dtype} scalar, got {a!r}")
    return p.type.numpy_type(a)


def run_function(module: K.Module, name: str, args: list, *, nthreads: int = 2,
                 order: str = "shuffle", seed: int = 0, check: bool = True,
                 max_alloc_bytes: int = 1 << 32) -> KirResult:
    """Run entry `name` of `module` on `args` (one per param: a scalar, or a
    Buffer / 1-D array / None for a pointer). `order` ("shuffle", "reverse",
    "forward") is the ParFor iteration order; `check` runs kir_check first;
    an Alloc of more than `max_alloc_bytes` fails with MemoryError."""
    fns = [f for f in module.functions if f.name == name]
    if not fns:
        raise KeyError(f"no function {name} in the module")
    f = fns[0]
    if check:
        check_function(f, module)
    if len(args) != len(f.params):
        raise TypeError(f"{name} takes {len(f.params)} arguments, got {len(args)}")
    if nthreads < 1 or order not in ("shuffle", "reverse", "forward"):
        raise ValueError(f"bad nthreads={nthreads} or order={order!r}")
    values = [_argument(p, a) for p, a in zip(f.params, args)]
    env = {p.name: v for p, v in zip(f.params, values)}
    it = _Interp(nthreads, order, seed, max_alloc_bytes)
    code, msg, fargs, message = 0, -1, [], ""
    with np.errstate(all="ignore"):
        try:
            it.block(f.body, env, {})
        except _Failure as e:
            code, msg, fargs = e.code, e.msg, e.args_
            template = module.messages[msg] if msg >= 0 else OUT_OF_MEMORY
            message = template.format(*fargs)
    result = KirResult(code, msg, fargs, message, it.allocs, it.freed, values)
    if code:
        # the failing entry frees what it still holds (kir.py)
        it.freed.update(id(b.array) for b in result.leaks())
    return result


__all__ = ["Buffer", "KirResult", "KirInterpError", "KirMemoryError",
           "KirPreconditionError", "UNINIT", "GARBAGE_BYTE", "run_function", "leaks",
           "cast", "bin_prim", "un_prim", "int_div", "int_rem", "POISON", "BIN_IMPL",
           "UN_IMPL", "CAST_IMPL"]
