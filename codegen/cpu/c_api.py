"""The C API every cpu library carries besides its entries (module.h):

    pyshark_ctx *pyshark_ctx_new(void);        a zeroed context (NULL: no memory)
    void pyshark_ctx_free(pyshark_ctx *ctx);   frees it (NULL is allowed)
    int64_t pyshark_error_message(const pyshark_ctx *ctx, char *buf, int64_t size);

pyshark_error_message writes the last error of `ctx` as text into buf,
"IndexError: index 7 is out of range for length 5", exactly the text the
Python wrapper raises (codegen/marshal.py fills the same template). It
writes "" when ctx->code is 0. It returns the length of the whole text, so
a caller can size its buffer, and it never writes more than size bytes,
truncating as snprintf does.

The message templates are the module's kir messages, "{}" marking each
i64 argument. They become snprintf formats ("%lld"; a literal '%' becomes
"%%") in a constant table, so C callers need nothing from Python. Written
in LLVM IR like the rest of the library, so the llvmlite JIT fallback has
it too.
"""
from __future__ import annotations

from llvmlite import ir

from ..marshal import ERRORS

_I8, _I32, _I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
_STR = _I8.as_pointer()
CTX_BYTES = 48                  # sizeof(pyshark_ctx): emit_llvm.CTX_TYPE

HEADER = """\
/* A context carries the error of the last call that failed. Make one with
   pyshark_ctx_new() (or zero a pyshark_ctx yourself), pass it to any number
   of calls from one thread at a time, and free it with pyshark_ctx_free().
   ctx->nthreads > 0 caps the threads of parallel loops (0: every CPU, or
   OMP_NUM_THREADS).
   ctx->sigint != 0: a SIGINT (Ctrl-C) during a call stops it within about a
   millisecond with code 8 (KeyboardInterrupt). For the call's duration the
   entry installs its own SIGINT handler, which calls the handler it
   displaced (yours), and puts yours back before it returns; with SIGINT
   ignored or at its default action it leaves SIGINT alone. Set it in calls
   from one thread at a time (Linux only; elsewhere it is ignored). The
   value 2 is PyShark's Python wrapper's (one handler for the process, left
   installed between calls): use 1. */
pyshark_ctx *pyshark_ctx_new(void);
void pyshark_ctx_free(pyshark_ctx *ctx);
/* The last error of ctx as text ("IndexError: ..."; "" when ctx->code is 0),
   written into buf (at most size bytes, NUL-terminated when size > 0); returns
   the length of the whole text, as snprintf does. */
int64_t pyshark_error_message(const pyshark_ctx *ctx, char *buf, int64_t size);
"""


def c_format(template: str) -> str:
    """A kir message template as a printf format of i64 arguments."""
    return template.replace("%", "%%").replace("{}", "%lld")


def _cstring(module: ir.Module, name: str, text: str) -> ir.Constant:
    data = bytearray(text.encode("utf-8")) + b"\0"
    ty = ir.ArrayType(_I8, len(data))
    g = ir.GlobalVariable(module, ty, name=name)
    g.global_constant = True
    g.linkage = "private"
    g.initializer = ir.Constant(ty, data)
    return g.bitcast(_STR)


def _declare(module: ir.Module, name: str, ret, args, var_arg=False) -> ir.Function:
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args, var_arg=var_arg), name=name)
    return fn


def _table(module: ir.Module, name: str, texts: list) -> ir.GlobalVariable:
    ptrs = [_cstring(module, f"{name}.{k}", t) for k, t in enumerate(texts)]
    ty = ir.ArrayType(_STR, len(ptrs))
    g = ir.GlobalVariable(module, ty, name=name)
    g.global_constant = True
    g.linkage = "private"
    g.initializer = ir.Constant(ty, ptrs)
    return g


def add_c_api(module: ir.Module, messages: list) -> None:
    """Adds the three functions of the module doc to `module`."""
    calloc = _declare(module, "calloc", _STR, [_I64, _I64])
    free = _declare(module, "free", ir.VoidType(), [_STR])
    snprintf = _declare(module, "snprintf", _I32, [_STR, _I64, _STR], var_arg=True)

    fn = ir.Function(module, ir.FunctionType(_STR, []), name="pyshark_ctx_new")
    b = ir.IRBuilder(fn.append_basic_block())
    b.ret(b.call(calloc, [_I64(1), _I64(CTX_BYTES)]))

    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [_STR]), name="pyshark_ctx_free")
    b = ir.IRBuilder(fn.append_basic_block())
    b.call(free, [fn.args[0]])
    b.ret_void()

    names = ["RuntimeError"] + [ERRORS[c].__name__ for c in sorted(ERRORS)]
    formats = [c_format(m) for m in messages] + ["error %lld in compiled code"]
    name_tab = _table(module, "pyshark.error_names", names)
    fmt_tab = _table(module, "pyshark.error_formats", formats)

    fn = ir.Function(module, ir.FunctionType(_I64, [_STR, _STR, _I64]),
                     name="pyshark_error_message")
    ctx, buf, size = fn.args
    entry, none, some = (fn.append_basic_block(n) for n in ("entry", "none", "some"))
    b = ir.IRBuilder(entry)
    words = b.bitcast(ctx, _I32.as_pointer())
    code = b.load(words)
    b.cbranch(b.icmp_signed("==", code, _I32(0)), none, some)

    b.position_at_end(none)                 # no error: "" when there is room
    has_room = b.icmp_signed(">", size, _I64(0))
    with b.if_then(has_room):
        b.store(_I8(0), buf)
    b.ret(_I64(0))

    b.position_at_end(some)
    msg = b.load(b.gep(words, [_I32(1)]))
    args = b.bitcast(b.gep(b.bitcast(ctx, _I8.as_pointer()), [_I64(8)]), _I64.as_pointer())
    vals = [b.load(b.gep(args, [_I64(k)])) for k in range(4)]
    known = b.and_(b.icmp_signed(">", code, _I32(0)),
                   b.icmp_signed("<", code, _I32(len(names))))
    kind = b.select(known, code, _I32(0))
    name = b.load(b.gep(name_tab, [_I32(0), kind]))
    in_table = b.and_(b.icmp_signed(">=", msg, _I32(0)),
                      b.icmp_signed("<", msg, _I32(len(messages))))
    which = b.select(in_table, msg, _I32(len(formats) - 1))
    fmt = b.load(b.gep(fmt_tab, [_I32(0), which]))
    # the unknown-message format shows the code, as marshal.error_from does
    first = b.select(in_table, vals[0], b.sext(code, _I64))
    # "Name: " then the message, each through snprintf into what is left of buf
    head = b.call(snprintf, [buf, size, _cstring(module, "pyshark.colon", "%s: "), name])
    head64 = b.sext(head, _I64)
    room = b.icmp_signed(">", size, head64)
    rest = b.select(room, b.sub(size, head64), _I64(0))
    at = b.select(room, head64, _I64(0))
    tail = b.call(snprintf, [b.gep(buf, [at]), rest, fmt, first, *vals[1:]])
    b.ret(b.add(head64, b.sext(tail, _I64)))
