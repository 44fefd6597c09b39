"""How an emitted function stops early (part of emit_llvm.py; see its docstring):
freeing what a failing call allocated, and stopping at Ctrl-C.

Every function (an entry, or a ParFor body function) has one `unwind`
block; a Fail, a failed Alloc, a failed ParFor and an interrupt all branch
there. It frees the function's live allocations, disarms SIGINT (entries),
and returns ctx->code (a body function just returns).

Live allocations. The lowering decides statically where memory is freed,
but at a Fail it knows nothing about what is live (loop-carried arrays, a
block allocated in one branch). So each function that allocates keeps a
small table of its live blocks on its stack (exact, at run time): a
successful Alloc appends the pointer, a Free removes it (searching from the
end: blocks are mostly freed in reverse order) before calling free(), a
Store of a pointer removes it (an entry's result, which the caller owns),
and unwind frees what is left. The table has one slot per pointer variable
the function declares: every live block is held by one of them, or normal
execution would leak it; a block that finds the table full is simply not
tracked (a leak on failure, never a double free). A ParFor body frees only
blocks it allocated itself (kir.py, checked by kir_interp), so the host's
table never holds a block that a body freed.

SIGINT (Ctrl-C). While Python waits in a ctypes call its own SIGINT handler
only sets a flag for the main thread's next bytecode, so a long call used to
run to its end. An entry called with ctx->sigint != 0 arms. With
ctx->sigint == 2 (runtime.SIGINT_SHARED: the Python wrapper's calls from
the main thread) it counts itself in with the thread team's runtime
(team.c, pysharkrt_sigint_enter/leave), whose one handler stays installed
in front of Python's and sets `pysharkrt_sigint_flag` while a call is in:
no system call per call (two sigaction calls cost 0.4 us in these VMs, more
than a small entry's whole work). With any other nonzero value (module.h's
C callers) it installs this module's handler with sigaction, which sets
the module's flag `pyshark.sigint.flag` and then calls the handler it
displaced, and restores that handler before returning. Compiled code polls
both flags (relaxed loads and a predicted branch) at cheap points: host
loops every iteration when the body holds a ParFor, an allocation or a
copy, every BODY_POLL_STRIDE iterations when it holds a loop, every
POLL_STRIDE otherwise (strips: an
outer loop over runs of the original loop, which keeps its one exit, so it
vectorizes and unswitches as before); each block a ParFor thread claims;
every BODY_POLL_STRIDE iterations of a ParFor body that loops; every
SEQ_CHUNK iterations of a ParFor run inline. A set
flag (with ctx->sigint set: a concurrent unarmed call ignores it) fails the
call with KeyboardInterrupt's code. Loops inside one ParFor iteration do
not poll (their vectorization matters), so a single element whose own loop
runs for seconds is finished first. Arming needs Linux's sigaction (x86-64
or aarch64 layout); elsewhere, and in entries without a loop, it is skipped.
"""
from __future__ import annotations

import weakref

from llvmlite import ir

from .. import kir as K
from .llvm_types import (CTX_ARGS, CTX_CODE, CTX_MSG, CTX_SIGINT, CTX_TYPE, counted_loop,
                         streaming_fence)
from .llvm_types import I1 as _I1, I8 as _I8, I32 as _I32, I64 as _I64, PTR as _PTR, VOID as _VOID
from .runtime import SIGINT_SHARED

INTERRUPT_MESSAGE = "interrupted by SIGINT (Ctrl-C)"
POLL_STRIDE = 4096          # iterations of a loop-free host loop between polls
BODY_POLL_STRIDE = 16       # ... of a loop whose body loops (a ParFor's too)
SEQ_CHUNK = 1 << 16         # iterations of an inline ParFor between polls

# Linux (x86-64, aarch64): struct sigaction is {handler, sigset_t mask (128
# bytes), int flags, restorer}; SA_SIGINFO 4, SA_ONSTACK 0x08000000.
_SIGINT = 2
_SIGACTION_BYTES = 152
_SA_FLAGS_AT = 136
_SA_SIGINFO = 4
_SA_ONSTACK = 0x08000000
_SIGACTION_T = ir.ArrayType(_I64, _SIGACTION_BYTES // 8)


def host_poll_stride(body: K.Block) -> int:
    """Iterations between polls of a host loop with this body: 1 when it
    holds a ParFor, an allocation or a copy (an iteration may take long;
    a poll costs nothing beside it), BODY_POLL_STRIDE when it holds a loop
    (which polls too; strips keep the outer loop's one exit: a poll at
    every back edge of mandelbrot's row loop cost 7%), else POLL_STRIDE."""
    stms = list(K.walk_stms(body))
    if any(isinstance(s, (K.ParFor, K.Alloc, K.CopyMem)) for s in stms):
        return 1
    if any(isinstance(s, (K.For, K.While)) for s in stms):
        return BODY_POLL_STRIDE
    return POLL_STRIDE


def has_loop(body: K.Block) -> bool:
    return any(isinstance(s, (K.For, K.While, K.ParFor)) for s in K.walk_stms(body))


def pointer_vars(body: K.Block, in_par: bool) -> int:
    """How many pointer variables a function declares (ParFor bodies belong
    to their own functions): the size of its table of live blocks."""
    names: set = set()
    _pointer_names(body, in_par, names)
    return len(names)


def _pointer_names(b: K.Block, in_par: bool, names: set) -> None:
    for s in b.stms:
        if isinstance(s, (K.Set, K.Alloc)) and isinstance(s.var.type, K.Ptr):
            names.add(s.var.name)
        if isinstance(s, K.ParFor) and not in_par:
            continue
        for sb in K.sub_blocks(s):
            _pointer_names(sb, in_par, names)


def allocates(body: K.Block, in_par: bool) -> bool:
    """Whether the function allocates (ParFor bodies, outside one, belong to
    their own functions). (Module functions, not recursive closures: see
    docs/decisions.md, "Tiered compilation", on reference cycles.)"""
    for s in body.stms:
        if isinstance(s, K.Alloc):
            return True
        if isinstance(s, K.ParFor) and not in_par:
            continue
        if any(allocates(sb, in_par) for sb in K.sub_blocks(s)):
            return True
    return False


class Runtime:
    """The module-level pieces, declared on first use: the table helpers,
    the SIGINT flag, handler, arm and disarm."""

    def __init__(self, module: ir.Module, decls, sigaction_ok: bool):
        self.module = module
        self.decls = decls
        self.sigaction_ok = sigaction_ok
        self._fns: dict = {}
        self._flag = None

    # -- failing ---------------------------------------------------------------

    def fail_fn(self, par: bool) -> ir.Function:
        """void fail(ctx, i32 code, i32 msg, i64 a0..a3): records a failure
        in ctx; the caller then branches to its unwind block. Host code
        stores code, msg and args; inside a ParFor (`par`) the first failure
        wins: a cmpxchg of ctx->code from 0, and only the winner stores msg
        and args. One `cold noinline` function per module instead of ~12
        instructions and two blocks at every Fail: LocVolCalib's strike
        body had 350 of them ("Compile time" in docs/cpu-backend.md)."""
        key = "fail.par" if par else "fail"
        fn = self._fns.get(key)
        if fn is not None:
            return fn
        fn = self._fns[key] = self._internal("pyshark." + key, _VOID,
                                             [_PTR, _I32, _I32] + [_I64] * 4)
        fn.attributes.add("cold")
        fn.attributes.add("noinline")
        ctx, code, msg = fn.args[:3]
        b = ir.IRBuilder(fn.append_basic_block("entry"))

        def field(*idx):
            return b.gep(ctx, [_I32(0)] + [_I32(i) for i in idx], inbounds=True,
                         source_etype=CTX_TYPE)
        if par:
            won = b.extract_value(b.cmpxchg(field(CTX_CODE), _I32(0), code, "seq_cst"), 1)
            first, out = fn.append_basic_block("first"), fn.append_basic_block("out")
            b.cbranch(won, first, out)
            b.position_at_end(out)
            b.ret_void()
            b.position_at_end(first)
        else:
            b.store(code, field(CTX_CODE))
        b.store(msg, field(CTX_MSG))
        for k in range(4):
            b.store(fn.args[3 + k], field(CTX_ARGS, k))
        b.ret_void()
        return fn

    # -- the table of live blocks --------------------------------------------

    def untrack_fn(self) -> ir.Function:
        """void untrack(ptr table, ptr count, ptr p): removes p if present."""
        fn = self._fns.get("untrack")
        if fn is not None:
            return fn
        fn = self._internal("pyshark.untrack", _VOID, [_PTR, _PTR, _PTR])
        tab, cnt, p = fn.args
        entry, head, body, hit, done = (fn.append_basic_block(n) for n in
                                        ("entry", "head", "body", "hit", "done"))
        b = ir.IRBuilder(entry)
        n = b.load(cnt, typ=_I64)
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(_I64)
        k.add_incoming(n, entry)
        b.cbranch(b.icmp_signed(">", k, _I64(0)), body, done)
        b.position_at_end(body)
        j = b.sub(k, _I64(1))
        slot = b.gep(tab, [j], inbounds=True, source_etype=_PTR)
        k.add_incoming(j, body)
        b.cbranch(b.icmp_unsigned("==", b.load(slot, typ=_PTR), p), hit, head)
        b.position_at_end(hit)
        last = b.sub(n, _I64(1))
        b.store(b.load(b.gep(tab, [last], inbounds=True, source_etype=_PTR), typ=_PTR), slot)
        b.store(last, cnt)
        b.branch(done)
        b.position_at_end(done)
        b.ret_void()
        return fn

    def free_all_fn(self) -> ir.Function:
        """void free_all(ptr table, ptr count): frees every tracked block."""
        fn = self._fns.get("free_all")
        if fn is not None:
            return fn
        fn = self._internal("pyshark.free_all", _VOID, [_PTR, _PTR])
        tab, cnt = fn.args
        entry, head, body, done = (fn.append_basic_block(n) for n in
                                   ("entry", "head", "body", "done"))
        b = ir.IRBuilder(entry)
        n = b.load(cnt, typ=_I64)
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(_I64)
        k.add_incoming(_I64(0), entry)
        b.cbranch(b.icmp_signed("<", k, n), body, done)
        b.position_at_end(body)
        p = b.load(b.gep(tab, [k], inbounds=True, source_etype=_PTR), typ=_PTR)
        b.call(self.decls.get("free", _VOID, [_PTR]), [p])
        k.add_incoming(b.add(k, _I64(1)), body)
        b.branch(head)
        b.position_at_end(done)
        b.store(_I64(0), cnt)
        b.ret_void()
        return fn

    # -- SIGINT ---------------------------------------------------------------

    def flag(self) -> ir.GlobalVariable:
        """The module's interrupt flag (i32; the handler sets it to 1)."""
        if self._flag is None:
            g = ir.GlobalVariable(self.module, _I32, name="pyshark.sigint.flag")
            g.linkage = "internal"
            g.initializer = _I32(0)
            g.align = 64
            self._flag = g
        return self._flag

    def shared_flag(self) -> ir.GlobalVariable:
        """The process's interrupt flag, the thread team's runtime's
        (team.c's pysharkrt_sigint_flag: its one SIGINT handler sets it for
        the calls of ctx->sigint == 2)."""
        g = self.module.globals.get("pysharkrt_sigint_flag")
        if g is None:
            g = ir.GlobalVariable(self.module, _I32, name="pysharkrt_sigint_flag")
            g.align = 4
        return g

    def _global(self, name: str, ty: ir.Type) -> ir.GlobalVariable:
        g = self.module.globals.get(name)
        if g is None:
            g = ir.GlobalVariable(self.module, ty, name=name)
            g.linkage = "internal"
            g.initializer = ir.Constant(ty, None)
            g.align = 8
        return g

    def _sigaction(self) -> ir.Function:
        return self.decls.get("sigaction", _I32, [_I32, _PTR, _PTR])

    def handler_fn(self) -> ir.Function:
        """void handler(int sig, siginfo_t *info, void *uc): sets the flag
        and calls the handler that arming displaced (`chain`)."""
        fn = self._fns.get("handler")
        if fn is not None:
            return fn
        fn = self._internal("pyshark.sigint.handler", _VOID, [_I32, _PTR, _PTR])
        sig, info, uc = fn.args
        chain = self._global("pyshark.sigint.chain", _SIGACTION_T)
        entry, dfl, live, three, one, out = (fn.append_basic_block(n) for n in (
            "entry", "dfl", "live", "three", "one", "out"))
        b = ir.IRBuilder(entry)
        h = b.load(chain, typ=_PTR)
        hv = b.ptrtoint(h, _I64)
        b.cbranch(b.icmp_unsigned("==", hv, _I64(1)), out, dfl)    # SIG_IGN: nothing
        b.position_at_end(dfl)
        is_dfl = b.icmp_unsigned("==", hv, _I64(0))
        with b.if_then(is_dfl):                                     # SIG_DFL: die of it
            b.call(self._sigaction(), [sig, chain, ir.Constant(_PTR, None)])
            b.call(self.decls.get("raise", _I32, [_I32]), [sig])
            b.ret_void()
        b.branch(live)
        b.position_at_end(live)
        b.store_atomic(_I32(1), self.flag(), "seq_cst", 4)
        flags = b.load(b.gep(chain, [_I64(_SA_FLAGS_AT)], inbounds=True, source_etype=_I8),
                       typ=_I32)
        b.cbranch(b.icmp_unsigned("!=", b.and_(flags, _I32(_SA_SIGINFO)), _I32(0)), three, one)
        b.position_at_end(three)
        h3 = b.load(chain, typ=ir.FunctionType(_VOID, [_I32, _PTR, _PTR]).as_pointer())
        b.call(h3, [sig, info, uc])
        b.branch(out)
        b.position_at_end(one)
        b.call(b.load(chain, typ=ir.FunctionType(_VOID, [_I32]).as_pointer()), [sig])
        b.branch(out)
        b.position_at_end(out)
        b.ret_void()
        return fn

    def arm_fn(self) -> ir.Function:
        """i1 arm(ptr saved): clears the flag and installs the handler,
        keeping the displaced action in `saved` (and in `chain`, for the
        handler). Returns 0 (and leaves SIGINT alone) when SIGINT is
        ignored or has its default action, when this handler is already
        installed, or when sigaction fails."""
        fn = self._fns.get("arm")
        if fn is not None:
            return fn
        fn = self._internal("pyshark.sigint.arm", _I1, [_PTR])
        saved = fn.args[0]
        chain = self._global("pyshark.sigint.chain", _SIGACTION_T)
        known = self._global("pyshark.sigint.known", _I32)
        null = ir.Constant(_PTR, None)
        entry, query, install, check, undo, ok, no = (fn.append_basic_block(n) for n in (
            "entry", "query", "install", "check", "undo", "ok", "no"))
        b = ir.IRBuilder(entry)
        act = b.alloca(_SIGACTION_T)
        act.type = _PTR
        # a signal that comes while sigaction below installs the handler but
        # has not yet returned the old action runs the handler with `chain`
        # from the last arming (the first arming asks sigaction for it)
        b.cbranch(b.icmp_unsigned("==", b.load(known, typ=_I32), _I32(0)), query, install)
        b.position_at_end(query)
        r = b.call(self._sigaction(), [_I32(_SIGINT), null, chain])
        b.store(_I32(1), known)
        b.cbranch(b.icmp_signed("==", r, _I32(0)), install, no)
        b.position_at_end(install)
        b.store_atomic(_I32(0), self.flag(), "seq_cst", 4)
        b.store(ir.Constant(_SIGACTION_T, None), act)
        b.store(self.handler_fn(), act)
        b.store(_I32(_SA_SIGINFO | _SA_ONSTACK),
                b.gep(act, [_I64(_SA_FLAGS_AT)], inbounds=True, source_etype=_I8))
        r = b.call(self._sigaction(), [_I32(_SIGINT), act, saved])
        b.cbranch(b.icmp_signed("==", r, _I32(0)), check, no)
        b.position_at_end(check)
        hv = b.ptrtoint(b.load(saved, typ=_PTR), _I64)
        # SIG_DFL, SIG_IGN, or this very handler (the module armed twice at
        # once, against module.h's advice: chaining to itself would recurse)
        mine = b.icmp_unsigned("==", hv, b.ptrtoint(self.handler_fn(), _I64))
        b.cbranch(b.or_(b.icmp_unsigned("<=", hv, _I64(1)), mine), undo, ok)
        b.position_at_end(undo)
        b.call(self._sigaction(), [_I32(_SIGINT), saved, null])
        b.branch(no)
        b.position_at_end(ok)
        memcpy = self.decls.get("llvm.memcpy.p0.p0.i64", _VOID, [_PTR, _PTR, _I64, _I1])
        b.call(memcpy, [chain, saved, _I64(_SIGACTION_BYTES), _I1(0)])
        b.ret(_I1(1))
        b.position_at_end(no)
        b.ret(_I1(0))
        return fn

    def disarm_fn(self) -> ir.Function:
        """void disarm(ptr saved): puts the displaced action back, then
        clears the flag (a Ctrl-C from here on is the caller's own)."""
        fn = self._fns.get("disarm")
        if fn is not None:
            return fn
        fn = self._internal("pyshark.sigint.disarm", _VOID, [_PTR])
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.call(self._sigaction(), [_I32(_SIGINT), fn.args[0], ir.Constant(_PTR, None)])
        b.store_atomic(_I32(0), self.flag(), "seq_cst", 4)
        b.ret_void()
        return fn

    def add_stop_fn(self) -> None:
        """`void pyshark_stop_calls(void)`, exported, where the module has a
        flag: sets it as SIGINT does, without Python's handler. The armed
        calls running now stop with KeyboardInterrupt's code at their next
        poll, and their callers, finding no Python signal pending, run them
        again (the call is pure): a tiered compile's swap reruns on the
        optimised module what the quick one was running (wrapper/tiers.py).
        A call that arms later clears the flag, so it costs nothing then."""
        if self._flag is None or "pyshark_stop_calls" in self.module.globals:
            return
        fn = ir.Function(self.module, ir.FunctionType(_VOID, []), name="pyshark_stop_calls")
        fn.attributes.add("nounwind")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.store_atomic(_I32(1), self.flag(), "seq_cst", 4)
        b.ret_void()

    def _internal(self, name: str, ret, args) -> ir.Function:
        fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        self._fns[name.rsplit(".", 1)[-1]] = fn
        return fn


class Unwinder:
    """One function's early exits: its table of live blocks, its unwind
    block, and (entries) its SIGINT arming."""

    def __init__(self, em, body: K.Block, *, entry: bool):
        # a weak proxy: the emitter holds its Unwinder (em.unwind), and the
        # cycle would keep both, and what they hold, for the cyclic collector
        self.em = weakref.proxy(em)
        rt = em.mod.runtime
        self.rt = rt
        ab = em.alloca_builder
        self.table = self.count = None
        if allocates(body, em.in_par):
            n = max(1, pointer_vars(body, em.in_par))
            self.capacity = n
            self.table = ab.alloca(ir.ArrayType(_PTR, n), name="live")
            self.table.type = _PTR
            self.count = ab.alloca(_I64, name="live.n")
            self.count.type = _PTR
            ab.store(_I64(0), self.count)
        self.armed = self.saved = self.entered = None
        if entry and rt.sigaction_ok and has_loop(body):
            self.saved = ab.alloca(_SIGACTION_T, name="sigint.saved")
            self.saved.type = _PTR
            self.armed = ab.alloca(_I1, name="sigint.armed")
            self.armed.type = _PTR
            ab.store(_I1(0), self.armed)
            self.entered = ab.alloca(_I1, name="sigint.entered")
            self.entered.type = _PTR
            ab.store(_I1(0), self.entered)
        self.block = None
        self.fence = False          # a streaming body: sfence before returning

    def target(self) -> ir.Block:
        """The unwind block (made on first use, filled by `finish`)."""
        if self.block is None:
            self.block = self.em.new_block("unwind")
        return self.block

    def arm(self):
        """The entry's prologue: arm SIGINT when ctx->sigint asks for it: 2
        (the Python wrapper's calls from the main thread) counts the call in
        with the runtime's one handler (team.c, pysharkrt_sigint_enter: no
        system call in the common case), any other nonzero value installs
        this module's handler for the call (arm_fn; module.h's C callers)."""
        if self.armed is None:
            return
        b = self.em.b
        want = b.load(self.em.ctx_field(CTX_SIGINT), typ=_I32)
        with b.if_else(b.icmp_signed("==", want, _I32(SIGINT_SHARED))) as (shared, own):
            with shared:
                enter = self.rt.decls.get("pysharkrt_sigint_enter", _I32, [])
                ok = b.icmp_signed("!=", b.call(enter, []), _I32(0))
                b.store(ok, self.entered)
                with b.if_then(ok):
                    b.store_atomic(_I32(0), self.rt.flag(), "seq_cst", 4)
            with own:
                with b.if_then(b.icmp_signed("!=", want, _I32(0))):
                    b.store(b.call(self.rt.arm_fn(), [self.saved]), self.armed)

    def disarm(self):
        if self.armed is None:
            return
        b = self.em.b
        with b.if_then(b.load(self.armed, typ=_I1)):
            b.call(self.rt.disarm_fn(), [self.saved])
        with b.if_then(b.load(self.entered, typ=_I1)):
            b.call(self.rt.decls.get("pysharkrt_sigint_leave", _VOID, []), [])
            b.store_atomic(_I32(0), self.rt.flag(), "seq_cst", 4)

    def track(self, p: ir.Value):
        if self.table is None:
            return
        b = self.em.b
        n = b.load(self.count, typ=_I64)
        with b.if_then(b.icmp_signed("<", n, _I64(self.capacity))):
            b.store(p, b.gep(self.table, [n], inbounds=True, source_etype=_PTR))
            b.store(b.add(n, _I64(1)), self.count)

    def untrack(self, p: ir.Value):
        if self.table is not None:
            self.em.b.call(self.rt.untrack_fn(), [self.table, self.count, p])

    def finish(self):
        """Fills the unwind block, if any exit uses it."""
        if self.block is None:
            return
        em = self.em
        b = em.b
        b.position_at_end(self.block)
        if self.table is not None:
            b.call(self.rt.free_all_fn(), [self.table, self.count])
        if em.in_par:
            if self.fence:
                streaming_fence(em)
            b.ret_void()
            return
        self.disarm()
        b.ret(b.load(em.ctx_field(CTX_CODE), typ=_I32))


def strips(em, lo: ir.Value, hi: ir.Value, stride: int, run):
    """for (c = lo; c < hi; c = e) { e = min(c + stride, hi); run(c, e, end);
    poll }: `run` emits one strip (it may branch to `end`, the block after
    the loop, where the builder is left). The strip's own loop keeps its
    single exit, so LLVM vectorizes and unswitches it as before."""
    b = em.b

    def step(c, end):
        e = b.select(b.icmp_signed(">", b.sub(hi, c), _I64(stride)), b.add(c, _I64(stride)), hi)
        run(c, e, end)
        if b.block.is_terminated:
            return None
        em.poll()
        return e
    counted_loop(b, em.fn, lo, hi, step, "strip")


def poll(em, interrupt_msg: int):
    """if ((flag | the runtime's flag) && ctx->sigint) fail with
    KeyboardInterrupt (see the module docstring); the flags' branch is
    marked unlikely."""
    b = em.b
    rt = em.mod.runtime
    if not rt.sigaction_ok:
        return
    slow, stop, cont = em.new_block("poll.set"), em.new_block("poll.stop"), em.new_block("poll.on")
    v = b.or_(b.load_atomic(rt.flag(), "monotonic", 4, typ=_I32),
              b.load_atomic(rt.shared_flag(), "monotonic", 4, typ=_I32))
    b.cbranch(b.icmp_unsigned("!=", v, _I32(0)), slow, cont).set_weights([1, 1 << 20])
    b.position_at_end(slow)
    want = b.load(em.ctx_field(CTX_SIGINT), typ=_I32)
    b.cbranch(b.icmp_signed("!=", want, _I32(0)), stop, cont)
    b.position_at_end(stop)
    em.fail(K.ERROR_CODES["KeyboardInterrupt"], interrupt_msg, [])
    em.goto(cont)
    b.position_at_end(cont)
