"""The call path of one entry as generated Python: the one way an opencl
entry call flows (Wrapper -> OpenCLModule.call -> this -> the host
function of host.py -> runtime.Call).

Host code (host.py) is generated per entry; so is what runs around it:
argument checks and uploads, the out-params, the error check, the retry
with larger work-item heaps, and the results. Spelled out as straight-line
code for the one entry, a device-array call runs about half the Python of
a loop over per-parameter closures and per-result records (saxpy with its
kernel launch stubbed out: docs/opencl-backend.md), and on a GPU every
microsecond of Python before the first launch is one of the call's wall
time.

The generated function works on the entry's flat core values (the ABI of
abi.json: a scalar, or an array as a pointer and its dimensions): an entry
whose parameters are tuples, records or arrays of them has its canonical
arguments flattened first (convert.FlatCall.args), and one whose result is
not a scalar, an array of scalars or a tuple of those has its flat results
built into the output at the end (FlatCall.output, or
device_array.output_keeping_arrays with device_arrays=True):

    def call(canon):                       # the canonical arguments
        p0, p1, = canon                        # or = flat_args(canon)
        while True:
            with LOCK:
                rt = Call(dev, kernels, heap)
                try:
                    a0 = T0(p0)                     # a scalar: its exact dtype
                    if type(p1) is DA or ...:       # an array: where it is, or sent
                        ...
                    err, arrays = rt.run(fn, [...], downloads)
                    if err is not None:             # heaps too small: grow, again
                        ...                         # (the same call: a function of its arguments)
                    return ...                      # the result
                finally:
                    rt.release()
"""
from __future__ import annotations

import numpy as np

from pyshark.core.types import SArray, SScalar, STuple, ScalarType, stype_base
from pyshark.wrapper.convert import FlatCall
from pyshark.wrapper.device_array import DeviceArray, device_array, output_keeping_arrays
from pyshark.wrapper.device_interface import is_device_array

from .runtime import DeviceScalar


def _is_leaf(st) -> bool:
    """A scalar or an array of scalars: one flat value, as users get it."""
    return isinstance(st, SScalar) or (isinstance(st, SArray)
                                       and isinstance(stype_base(st), SScalar))


def _abi(pairs) -> list:
    """[(numpy dtype, rank)] of abi.json's [scalar type, rank] pairs."""
    return [(np.dtype(ScalarType(e).dtype), r) for e, r in pairs]


def caller_source(entry, spec: dict, device_arrays: bool) -> tuple[str, dict]:
    """(source of `def call(canon)`, the constants it names) for an entry
    and its ABI (abi.json: "params" and "results")."""
    params, results = _abi(spec["params"]), _abi(spec["results"])
    consts: dict = {}
    ind = " " * 16
    lines = []
    args = []
    for k, (dt, r) in enumerate(params):
        consts[f"T{k}"] = dt.type
        if r == 0:
            lines.append(f"{ind}a{k} = T{k}(p{k})")
            args.append(f"a{k}")
            continue
        consts[f"DT{k}"] = dt
        lines += [
            f"{ind}if type(p{k}) is DA or (type(p{k}) is not ndarray and is_da(p{k})):",
            f"{ind}    if p{k}.device is not dev:",
            f"{ind}        raise ValueError(elsewhere(p{k}, dev))",
            f"{ind}    m{k} = (p{k}._mem, p{k}._off)",
            f"{ind}    s{k} = p{k}.shape",
            f"{ind}else:",
            f"{ind}    v = ascontiguousarray(p{k}, dtype=DT{k})",
            f"{ind}    m{k} = rt.upload(v)",
            f"{ind}    s{k} = v.shape",
        ]
        args += [f"m{k}"] + [f"i64(s{k}[{d}])" for d in range(r)]
    outs = []
    for j, (dt, r) in enumerate(results):
        consts[f"R{j}"] = dt.type
        consts[f"RD{j}"] = dt
        if r == 0:
            lines.append(f"{ind}c{j} = [None]")
            args.append(f"(c{j}, 0)")
            outs.append(f"[c{j}]")
        else:
            lines.append(f"{ind}q{j} = [None]; h{j} = [0] * {r}")
            args += [f"(q{j}, 0)", f"(h{j}, 0)"]
            outs.append(f"(q{j}, h{j})")
    consts["RESULTS"] = results
    if device_arrays or all(r == 0 for _, r in results):
        downloads = "()"
    else:
        downloads = f"Lazy([{', '.join(outs)}], RESULTS)"
    lines += [
        f"{ind}err, arrays = rt.run(fn, [{', '.join(args)}], {downloads})",
        f"{ind}if err is not None:",
        f"{ind}    if err[0] == HEAP_FULL:",
        f"{ind}        grow_heap(heap, int(err[2][0]), dev)",
        f"{ind}        continue",
        f"{ind}    raise error_from(err[0], err[1], err[2], messages)",
    ]
    exprs = []
    arrays_seen = 0
    # device arrays: a scalar result is a 0-d DeviceArray (as CuPy's
    # reductions give), left where the device computed it (no wait)
    keep = device_arrays and _flat_result(entry)
    for j, (dt, r) in enumerate(results):
        if r == 0 and keep:
            exprs.append(f"kept_scalar(rt, dev, c{j}[0], RD{j})")
        elif r == 0:
            exprs.append(f"R{j}(c{j}[0])")
        elif device_arrays:
            lines += [
                f"{ind}q = q{j}[0]",
                f"{ind}if isinstance(q[0], DevMem):",
                f"{ind}    mem, off = rt.detach(q)",
                f"{ind}    r{j} = device_array(dev, mem, off, tuple([int(d) for d in h{j}]), RD{j})",
                f"{ind}else:                                   # host memory: never so today",
                f"{ind}    r{j} = rt.download(q, tuple([int(d) for d in h{j}]), RD{j})",
            ]
            exprs.append(f"r{j}")
        else:
            exprs.append(f"arrays[{arrays_seen}]")
            arrays_seen += 1
    result = _result(entry, exprs, device_arrays, consts)
    names = [f"p{k}" for k in range(len(params))]
    flat = FlatCall(entry)
    if flat.flat_params:
        unpack = f"    {', '.join(names)}, = canon" if names else "    pass"
    else:
        consts["flat_args"] = flat.args
        unpack = f"    {', '.join(names)}, = flat_args(canon)" if names else "    pass"
    src = "\n".join([
        "def call(canon):",
        unpack,
        "    while True:",
        "        with LOCK:",
        "            rt = Call(dev, kernels, heap)",
        *(["            rt.keep_scalars = True"] if keep else []),
        "            try:",
        *lines,
        f"                return {result}",
        "            finally:",
        "                rt.release()",
        "",
    ])
    return src, consts


def _flat_result(entry) -> bool:
    """A scalar, an array of scalars or a tuple of those: results that the
    user gets as they are (no output format to build)."""
    ret = entry.ret
    return _is_leaf(ret) or (isinstance(ret, STuple) and all(_is_leaf(e) for e in ret.elems))


def kept_scalar(rt, dev, v, dtype):
    """A scalar result as a 0-d DeviceArray: over the device element
    load_result left (runtime.DeviceScalar), or over a one-element block
    the value computed on the host is sent to (no wait)."""
    if type(v) is DeviceScalar:
        return device_array(dev, v.mem, v.off, (), dtype)
    mem, off = rt.detach(rt.upload(np.full(1, v, dtype)))
    return device_array(dev, mem, off, (), dtype)


def _result(entry, exprs: list, device_arrays: bool, consts: dict) -> str:
    """The expression of the user-facing result over the flat results'
    expressions: themselves for a scalar, an array of scalars or a tuple of
    those; otherwise the flat results built into the output format."""
    ret = entry.ret
    if _is_leaf(ret):
        return exprs[0]
    if isinstance(ret, STuple) and all(_is_leaf(e) for e in ret.elems):
        return f"({''.join(e + ', ' for e in exprs)})"
    flat = f"[{', '.join(exprs)}]"
    if device_arrays:
        consts["RET"] = ret
        return f"keeping(RET, {flat}, asarray)"
    consts["output"] = FlatCall(entry).output
    return f"output({flat})"


class Lazy:
    """The (pointer, shape, dtype) of the array results, read when iterated
    (after the host function has filled the out-params)."""

    __slots__ = ("outs", "results")

    def __init__(self, outs, results):
        self.outs, self.results = outs, results

    def __iter__(self):
        for (dt, r), o in zip(self.results, self.outs):
            if r:
                ptr, shape = o
                yield ptr[0], tuple([int(d) for d in shape]), dt


def elsewhere(v, dev) -> str:
    """Why a DeviceArray argument of another device is refused."""
    return (f"a DeviceArray argument lives on the OpenCL device {v.device.name}, "
            f"this module runs on {dev.name}: pass np.asarray(value) "
            f"(a copy through the host)")


def make_caller(entry, spec: dict, device_arrays: bool, env: dict):
    """The generated call function of an entry. `env`: what it names
    besides its constants (dev, kernels, heap, fn, messages, and the
    runtime's Call, LOCK, DevMem, grow_heap; HEAP_FULL, error_from)."""
    src, consts = caller_source(entry, spec, device_arrays)
    namespace = dict(env)
    namespace.update(consts)
    namespace.update(DA=DeviceArray, ndarray=np.ndarray, is_da=is_device_array,
                     ascontiguousarray=np.ascontiguousarray, i64=np.int64, asarray=np.asarray,
                     device_array=device_array, keeping=output_keeping_arrays, Lazy=Lazy,
                     elsewhere=elsewhere, kept_scalar=kept_scalar)
    exec(compile(src, f"<pyshark caller {entry.name}>", "exec"), namespace)
    return namespace["call"]
