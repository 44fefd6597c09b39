"""The call path of one entry as generated Python (the opencl backend's
fast path).

Host code (host.py) is generated per entry; so is what runs around it:
argument checks and uploads, the out-params, the error check and the
results. backend._Caller did this with loops over per-parameter closures
and per-result records; spelled out as straight-line code for the one
entry, a device-array call runs about half the Python (saxpy with its
kernel launch stubbed out: see docs/opencl-backend.md), and on a GPU every
microsecond of Python before the first launch is a microsecond of the
call's wall time.

Made for entries whose parameters are scalars or arrays of scalars (the
canonical arguments are the flat ones) and whose result is a scalar, an
array of scalars, or a tuple of those; `caller_source` returns None for the
others, which keep backend._Caller's general path. The generated function
does what that path does, in the same order, with the same exceptions:

    def call(canon):                       # the canonical arguments
        p0, p1 = canon
        with LOCK:
            rt = Call(dev, kernels, heap)
            try:
                a0 = T0(p0)                     # a scalar: its exact dtype
                if type(p1) is DA or ...:       # an array: where it is, or sent
                    ...
                err, arrays = rt.run(fn, [...], downloads)
                ...                             # raise, or the result
            finally:
                rt.release()
"""
from __future__ import annotations

import numpy as np

from pyshark.core.types import SArray, SScalar, STuple, stype_base, stype_rank
from pyshark.wrapper.device_array import DeviceArray
from pyshark.wrapper.device_interface import is_device_array


def _leaf(st) -> tuple | None:
    """(dtype, rank) of a scalar or an array of scalars; None otherwise."""
    if isinstance(st, SScalar):
        return np.dtype(st.t.dtype), 0
    if isinstance(st, SArray) and isinstance(stype_base(st), SScalar):
        return np.dtype(stype_base(st).t.dtype), stype_rank(st)
    return None


def caller_source(entry, device_arrays: bool) -> tuple[str, dict] | None:
    """(source of `def call(canon)`, the constants it names) for an entry,
    or None when its parameters or result are not of the handled kinds."""
    params = [_leaf(p.stype) for p in entry.params]
    ret = entry.ret
    rets = [ret] if not isinstance(ret, STuple) else list(ret.elems)
    results = [_leaf(r) for r in rets]
    if any(p is None for p in params) or any(r is None for r in results):
        return None
    consts: dict = {}
    ind = " " * 12
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
            f"{ind}        raise ValueError(elsewhere(p{k}))",
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
    consts["RESULTS"] = [(dt, r) for dt, r in results]
    if device_arrays or all(r == 0 for _, r in results):
        downloads = "()"
    else:
        downloads = f"Lazy([{', '.join(outs)}], RESULTS)"
    lines += [
        f"{ind}err, arrays = rt.run(fn, [{', '.join(args)}], {downloads})",
        f"{ind}if err is not None:",
        f"{ind}    if err[0] == HEAP_FULL:",
        f"{ind}        raise HeapFull(int(err[2][0]))",
        f"{ind}    raise error_from(err[0], err[1], err[2], messages)",
    ]
    exprs = []
    arrays_seen = 0
    for j, (dt, r) in enumerate(results):
        if r == 0:
            exprs.append(f"R{j}(c{j}[0])")
        elif device_arrays:
            lines += [
                f"{ind}q = q{j}[0]",
                f"{ind}if isinstance(q[0], DevMem):",
                f"{ind}    mem, off = rt.detach(q)",
                f"{ind}    r{j} = device_array(dev, mem, off, tuple([int(d) for d in h{j}]), RD{j})",
                f"{ind}else:",
                f"{ind}    r{j} = rt.download(q, tuple([int(d) for d in h{j}]), RD{j})",
            ]
            exprs.append(f"r{j}")
        else:
            exprs.append(f"arrays[{arrays_seen}]")
            arrays_seen += 1
    result = exprs[0] if not isinstance(ret, STuple) else f"({''.join(e + ', ' for e in exprs)})"
    names = [f"p{k}" for k in range(len(params))]
    unpack = (f"        {', '.join(names)}, = canon" if names else "        pass")
    src = "\n".join([
        "def call(canon):",
        unpack,
        "        with LOCK:",
        "            rt = Call(dev, kernels, heap)",
        "            try:",
        *["    " + ln for ln in lines],
        f"                return {result}",
        "            finally:",
        "                rt.release()",
        "",
    ])
    return src, consts


def make_caller(entry, device_arrays: bool, env: dict):
    """The generated call function of an entry (None: not a handled kind).
    `env`: what it names besides its constants (dev, kernels, heap, fn,
    messages, Call, LOCK, DevMem, device_array, HeapFull, HEAP_FULL,
    error_from, Lazy, elsewhere)."""
    made = caller_source(entry, device_arrays)
    if made is None:
        return None
    src, consts = made
    namespace = dict(env)
    namespace.update(consts)
    namespace.update(DA=DeviceArray, ndarray=np.ndarray, is_da=is_device_array,
                     ascontiguousarray=np.ascontiguousarray, i64=np.int64)
    exec(compile(src, f"<pyshark caller {entry.name}>", "exec"), namespace)
    return namespace["call"]

