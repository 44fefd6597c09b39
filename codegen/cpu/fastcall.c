/* fastcall.c: the C fast path of a cpu entry's call from Python (the host
   time of a call on small data: ~15-50 us through the Python path, most of it
   convert.bind_args, ctypes' marshalling and _adopt; see docs/cpu-backend.md,
   "Call overhead"). fastcall.py builds it at first use, as a CPython
   extension against Python.h and numpy's headers, and gives each Wrapper
   attribute of an entry one `Entry`.

   An Entry is a vectorcall object that does, in C, what the Python path
   (Wrapper's bound call -> convert.bind_args -> CpuModule.call ->
   _Caller.__call__ -> _adopt) does for the common case only:
     - positional arguments, as many as the parameters (no keywords);
     - a scalar parameter given exactly what convert._fast_converter takes
       as it is: a numpy scalar of its exact type, a Python int in range
       (integer parameters), a Python float (f64);
     - an array parameter given an ndarray (exactly np.ndarray), C-contiguous,
       of the parameter's dtype (the same object or ==) and rank: its data
       pointer and dims go in as they are;
     - a result that is a scalar, an array of scalars or a tuple of those.
   Anything else calls the Python path (`slow`, the Wrapper's own bound call)
   with the same arguments, so its conversions and its exceptions are the ones
   users get.

   The call: a pyshark_ctx on the C stack (nthreads: the Wrapper's
   num_threads, else wrapper.backend.PROCESS_NUM_THREADS[0], else 0; sigint
   2 when called from the main thread: the runtime's shared handler), the
   entry's function through its address with the GIL released (as ctypes
   does). Code 8 (Ctrl-C): the results it handed over are freed, Python's
   signal handlers run, and the
   call runs again (_Caller._interrupted). Any other nonzero code: the results
   are freed and `fail(code, msg, args)` raises what _Caller raises.

   Results: a scalar as its exact numpy scalar type (PyArray_Scalar, as
   dt.type(value)); an array as an ndarray over the block the library
   malloc'd, without a copy, whose base is a capsule that frees the block with
   the library's free (the address of backend._free's function) when numpy
   lets go of it, as _adopt's weakref.finalize does.

   Calling an entry whose signature is known only at run time, without libffi:
   an entry takes (pyshark_ctx *, then per parameter a scalar or a pointer and
   one int64_t per dimension, then per result one or two pointers). In the
   SysV x86-64 and Linux AArch64 calling conventions every argument of
   integer class (pointers, integers widened to 64 bits here) takes the next
   integer register, every float or double the next vector register, each
   sequence on its own, and integer arguments past the registers go to the
   stack in 8-byte slots in order. So one fixed prototype -- NREG int64_t, 8
   doubles, NSTACK int64_t -- calls any entry with at most 8 float arguments
   and NREG + NSTACK integer ones: its integer arguments in order in the
   int64_t slots, its float ones in the double slots (an f32 as a double whose
   low 32 bits are the float's bits: the callee reads the low lane), unused
   slots zero (the caller owns its stack area; the callee ignores them).
   fastcall.py makes an Entry only where this holds (the `abi` probe calls a
   ctypes callback of a mixed signature through this path, once per process,
   and checks every value arrived) and on these two conventions only. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && !defined(_WIN32)
#define NREG 6
#define CONVENTION "sysv-x86-64"
#elif defined(__aarch64__) && defined(__linux__)
#define NREG 8
#define CONVENTION "aapcs64-linux"
#else
#define NREG 0
#define CONVENTION ""
#endif
#define NSTACK 26
#define NFLT 8
#define NINT (NREG + NSTACK)
#define MAX_RANK 8
#define MAX_RESULTS 16
#define INTERRUPTED 8           /* kir.ERROR_CODES["KeyboardInterrupt"] */

typedef struct {                /* runtime.PysharkCtx (fastcall.py checks the layout) */
    int32_t code; int32_t msg; int64_t args[4]; int32_t nthreads; int32_t sigint;
} pyshark_ctx;

enum { K_I8, K_I16, K_I32, K_I64, K_U8, K_U16, K_U32, K_U64, K_F32, K_F64, K_BOOL };

typedef union { uint64_t u; double d; } fslot_t;

#if NREG
typedef int64_t gi_t;
typedef double gd_t;
#define S26 gi_t, gi_t, gi_t, gi_t, gi_t, gi_t, gi_t, gi_t, gi_t, gi_t, gi_t, gi_t, gi_t, \
    gi_t, gi_t, gi_t, gi_t, gi_t, gi_t, gi_t, gi_t, gi_t, gi_t, gi_t, gi_t, gi_t
#if NREG == 6
typedef int32_t (*gen_fn)(gi_t, gi_t, gi_t, gi_t, gi_t, gi_t,
                          gd_t, gd_t, gd_t, gd_t, gd_t, gd_t, gd_t, gd_t, S26);
#define REGS(i) i[0], i[1], i[2], i[3], i[4], i[5]
#else
typedef int32_t (*gen_fn)(gi_t, gi_t, gi_t, gi_t, gi_t, gi_t, gi_t, gi_t,
                          gd_t, gd_t, gd_t, gd_t, gd_t, gd_t, gd_t, gd_t, S26);
#define REGS(i) i[0], i[1], i[2], i[3], i[4], i[5], i[6], i[7]
#endif
#define FLTS(f) f[0].d, f[1].d, f[2].d, f[3].d, f[4].d, f[5].d, f[6].d, f[7].d
#define S(k) i[NREG + k]
#define STACK(i) S(0), S(1), S(2), S(3), S(4), S(5), S(6), S(7), S(8), S(9), S(10), S(11), \
    S(12), S(13), S(14), S(15), S(16), S(17), S(18), S(19), S(20), S(21), S(22), S(23),   \
    S(24), S(25)

static int32_t gen_call(void *fn, const int64_t *i, const fslot_t *f) {
    return ((gen_fn)fn)(REGS(i), FLTS(f), STACK(i));
}
#else
static int32_t gen_call(void *fn, const int64_t *i, const fslot_t *f) { return -1; }
#endif

typedef struct {
    int kind;                   /* K_* of a scalar; -1: an array */
    int slot;                   /* scalar: its int or float slot; array: the pointer's */
    int rank;                   /* array */
    PyObject *type;             /* scalar: the numpy scalar type; array: the dtype */
    long long lo, hi;           /* integer scalar (not u64): the range of a Python int */
} param_t;

typedef struct {
    int kind, rank, slot;       /* slot: the int slot of the cell (or block) pointer */
    PyArray_Descr *descr;
} result_t;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *dict;
    PyObject *slow, *fail, *main, *pnt, *keep;
    void *fn;
    int nthreads;               /* the Wrapper's num_threads; 0: PROCESS_NUM_THREADS */
    int nparams, nresults, as_tuple;
    param_t *params;
    result_t *results;
    unsigned long long fast_calls, slow_calls;
} Entry;

static void (*lib_free)(void *);    /* the library's free(), set by make */
static const char BLOCK[] = "pyshark.cpu.block";

static void block_free(PyObject *cap) {
    void *p = PyCapsule_GetPointer(cap, BLOCK);
    if (p) lib_free(p);
    else PyErr_Clear();
}

/* -- arguments --------------------------------------------------------------------- */

static int64_t widen(int kind, const void *v) {    /* an integer scalar as int64_t */
    switch (kind) {
    case K_I8: return *(const int8_t *)v;
    case K_I16: return *(const int16_t *)v;
    case K_I32: return *(const int32_t *)v;
    case K_I64: return *(const int64_t *)v;
    case K_U8: return *(const uint8_t *)v;
    case K_U16: return *(const uint16_t *)v;
    case K_U32: return *(const uint32_t *)v;
    case K_U64: return (int64_t)*(const uint64_t *)v;
    default: return *(const uint8_t *)v != 0;      /* K_BOOL */
    }
}

/* v as scalar parameter p; 0: not a common case (the Python path) */
static int put_scalar(const param_t *p, PyObject *v, int64_t *iv, fslot_t *fv) {
    if ((PyObject *)Py_TYPE(v) == p->type) {        /* a numpy scalar of the exact type */
        union { uint64_t u; double d; float f; unsigned char b[16]; } buf;
        memset(&buf, 0, sizeof buf);
        PyArray_ScalarAsCtype(v, &buf);
        if (p->kind == K_F32) { uint32_t bits; memcpy(&bits, &buf.f, 4); fv[p->slot].u = bits; }
        else if (p->kind == K_F64) fv[p->slot].d = buf.d;
        else iv[p->slot] = widen(p->kind, &buf);
        return 1;
    }
    if (p->kind == K_F64) {
        if (!PyFloat_CheckExact(v)) return 0;
        fv[p->slot].d = PyFloat_AS_DOUBLE(v);
        return 1;
    }
    if (p->kind == K_F32 || p->kind == K_BOOL || !PyLong_CheckExact(v)) return 0;
    if (p->kind == K_U64) {
        unsigned long long x = PyLong_AsUnsignedLongLong(v);
        if (x == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        iv[p->slot] = (int64_t)x;
        return 1;
    }
    int over = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &over);
    if (over || (x == -1 && PyErr_Occurred())) { PyErr_Clear(); return 0; }
    if (x < p->lo || x > p->hi) return 0;
    iv[p->slot] = x;
    return 1;
}

static int put_array(const param_t *p, PyObject *v, int64_t *iv) {
    if (Py_TYPE(v) != &PyArray_Type) return 0;
    PyArrayObject *a = (PyArrayObject *)v;
    if (PyArray_NDIM(a) != p->rank || !PyArray_IS_C_CONTIGUOUS(a)) return 0;
    PyObject *dt = (PyObject *)PyArray_DESCR(a);
    if (dt != p->type) {
        int eq = PyObject_RichCompareBool(dt, p->type, Py_EQ);
        if (eq != 1) { PyErr_Clear(); return 0; }
    }
    iv[p->slot] = (int64_t)(intptr_t)PyArray_DATA(a);
    npy_intp *dims = PyArray_DIMS(a);
    for (int i = 0; i < p->rank; i++) iv[p->slot + 1 + i] = (int64_t)dims[i];
    return 1;
}

/* -- results ------------------------------------------------------------------------ */

static void free_blocks(Entry *e, void **blocks, int from) {
    for (int k = from; k < e->nresults; k++)
        if (e->results[k].rank && blocks[k]) { lib_free(blocks[k]); blocks[k] = NULL; }
}

static PyObject *one_result(Entry *e, int k, uint64_t *cells, void **blocks,
                            int64_t (*shapes)[MAX_RANK]) {
    const result_t *r = &e->results[k];
    if (r->rank == 0) {
        if (r->kind == K_BOOL) cells[k] = (*(uint8_t *)&cells[k]) != 0;
        return PyArray_Scalar(&cells[k], r->descr, NULL);
    }
    npy_intp dims[MAX_RANK];
    for (int i = 0; i < r->rank; i++) dims[i] = (npy_intp)shapes[k][i];
    void *p = blocks[k];
    blocks[k] = NULL;           /* the capsule (or this function) frees it from now on */
    if (!p) {                   /* no block although the call succeeded: never seen */
        PyErr_SetString(PyExc_SystemError, "pyshark fastcall: a result without a block");
        return NULL;
    }
    PyObject *cap = PyCapsule_New(p, BLOCK, block_free);
    if (!cap) { lib_free(p); return NULL; }
    Py_INCREF(r->descr);
    PyObject *a = PyArray_NewFromDescr(&PyArray_Type, r->descr, r->rank, dims, NULL, p,
                                       NPY_ARRAY_CARRAY, NULL);
    if (!a) { Py_DECREF(cap); return NULL; }
    if (PyArray_SetBaseObject((PyArrayObject *)a, cap) < 0) { Py_DECREF(a); return NULL; }
    return a;
}

static PyObject *results(Entry *e, uint64_t *cells, void **blocks,
                         int64_t (*shapes)[MAX_RANK]) {
    if (!e->as_tuple) {
        PyObject *v = one_result(e, 0, cells, blocks, shapes);
        free_blocks(e, blocks, 1);
        return v;
    }
    PyObject *out = PyTuple_New(e->nresults);
    if (!out) { free_blocks(e, blocks, 0); return NULL; }
    for (int k = 0; k < e->nresults; k++) {
        PyObject *v = one_result(e, k, cells, blocks, shapes);
        if (!v) { free_blocks(e, blocks, k + 1); Py_DECREF(out); return NULL; }
        PyTuple_SET_ITEM(out, k, v);
    }
    return out;
}

/* -- the call ----------------------------------------------------------------------- */

static PyObject *slow_path(Entry *e, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    if (!e->slow) {                         /* cleared by the collector */
        PyErr_SetString(PyExc_RuntimeError, "this pyshark entry was cleared");
        return NULL;
    }
    e->slow_calls++;
    return PyObject_Vectorcall(e->slow, args, nargsf, kwnames);
}

static PyObject *entry_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                  PyObject *kwnames) {
    Entry *e = (Entry *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if ((kwnames && PyTuple_GET_SIZE(kwnames)) || nargs != e->nparams)
        return slow_path(e, args, nargsf, kwnames);
    pyshark_ctx ctx;
    int64_t iv[NINT > 0 ? NINT : 1];
    fslot_t fv[NFLT];
    uint64_t cells[MAX_RESULTS];
    void *blocks[MAX_RESULTS];
    int64_t shapes[MAX_RESULTS][MAX_RANK];
    memset(&ctx, 0, sizeof ctx);
    memset(iv, 0, sizeof iv);
    memset(fv, 0, sizeof fv);
    iv[0] = (int64_t)(intptr_t)&ctx;
    for (int i = 0; i < e->nparams; i++) {
        const param_t *p = &e->params[i];
        if (!(p->kind < 0 ? put_array(p, args[i], iv) : put_scalar(p, args[i], iv, fv)))
            return slow_path(e, args, nargsf, kwnames);
    }
    for (int k = 0; k < e->nresults; k++) {
        const result_t *r = &e->results[k];
        cells[k] = 0;
        blocks[k] = NULL;
        if (r->rank == 0) {
            iv[r->slot] = (int64_t)(intptr_t)&cells[k];
        } else {
            iv[r->slot] = (int64_t)(intptr_t)&blocks[k];
            iv[r->slot + 1] = (int64_t)(intptr_t)shapes[k];
        }
    }
    int nt = e->nthreads;                   /* _Caller: num_threads or PROCESS_NUM_THREADS[0] or 0 */
    if (!nt && PyList_GET_SIZE(e->pnt)) {
        PyObject *d = PyList_GET_ITEM(e->pnt, 0);
        if (PyLong_CheckExact(d)) nt = (int)PyLong_AsLong(d);
        if (nt == -1 && PyErr_Occurred()) { PyErr_Clear(); nt = 0; }
    }
    ctx.nthreads = nt;
    if (PyList_GET_SIZE(e->main)) {         /* backend._MAIN[0] (set again after a fork) */
        PyObject *m = PyList_GET_ITEM(e->main, 0);
        unsigned long long ident = PyLong_Check(m) ? PyLong_AsUnsignedLongLongMask(m) : 0;
        if (PyErr_Occurred()) { PyErr_Clear(); ident = 0; }
        /* 2: the runtime's one SIGINT handler (runtime.SIGINT_SHARED) */
        ctx.sigint = (unsigned long long)PyThread_get_thread_ident() == ident ? 2 : 0;
    }
    int32_t code;
    /* the function and its failure path together, read with the GIL held:
       retarget may replace both while the call runs */
    void *fn = e->fn;
    PyObject *fail = e->fail;
    Py_INCREF(fail);
    Py_BEGIN_ALLOW_THREADS
    code = gen_call(fn, iv, fv);
    Py_END_ALLOW_THREADS
    while (code == INTERRUPTED) {           /* Ctrl-C: free, Python's handlers, then again */
        free_blocks(e, blocks, 0);
        if (PyErr_CheckSignals() < 0) { Py_DECREF(fail); return NULL; }
        fn = e->fn;
        Py_SETREF(fail, Py_NewRef(e->fail));
        Py_BEGIN_ALLOW_THREADS
        code = gen_call(fn, iv, fv);
        Py_END_ALLOW_THREADS
    }
    e->fast_calls++;                        /* it ran here, whatever it returned */
    if (code) {
        free_blocks(e, blocks, 0);
        PyObject *r = PyObject_CallFunction(fail, "ii(LLLL)", (int)ctx.code, (int)ctx.msg,
                                            (long long)ctx.args[0], (long long)ctx.args[1],
                                            (long long)ctx.args[2], (long long)ctx.args[3]);
        Py_DECREF(fail);
        if (r) {                            /* fail() returned: it must raise */
            Py_DECREF(r);
            PyErr_Format(PyExc_SystemError, "pyshark fastcall: the call failed (code %d) "
                         "and no exception was raised", (int)code);
        }
        return NULL;
    }
    Py_DECREF(fail);
    return results(e, cells, blocks, shapes);
}

/* -- the type ------------------------------------------------------------------------ */

static int entry_traverse(PyObject *self, visitproc visit, void *arg) {
    Entry *e = (Entry *)self;
    Py_VISIT(e->dict); Py_VISIT(e->slow); Py_VISIT(e->fail); Py_VISIT(e->main);
    Py_VISIT(e->pnt); Py_VISIT(e->keep);
    for (int i = 0; e->params && i < e->nparams; i++) Py_VISIT(e->params[i].type);
    for (int i = 0; e->results && i < e->nresults; i++) Py_VISIT(e->results[i].descr);
    return 0;
}

static int entry_clear(PyObject *self) {
    Entry *e = (Entry *)self;
    Py_CLEAR(e->dict); Py_CLEAR(e->slow); Py_CLEAR(e->fail); Py_CLEAR(e->main);
    Py_CLEAR(e->pnt); Py_CLEAR(e->keep);
    for (int i = 0; e->params && i < e->nparams; i++) Py_CLEAR(e->params[i].type);
    for (int i = 0; e->results && i < e->nresults; i++) Py_CLEAR(e->results[i].descr);
    e->nparams = -1;            /* cleared: every call goes to slow_path, which refuses */
    return 0;
}

static void entry_dealloc(PyObject *self) {
    Entry *e = (Entry *)self;
    PyObject_GC_UnTrack(self);
    entry_clear(self);
    PyMem_Free(e->params);
    PyMem_Free(e->results);
    Py_TYPE(self)->tp_free(self);
}

#include "fastcall_entry.h"

PSK_ENTRY_TYPE("_pyshark_cpucall.Entry",
               "A cpu entry's call: the common case in C, the rest in Python.");

/* -- making one ------------------------------------------------------------------------ */

/* make(slow, fail, main, pnt, keep, fn, free, nthreads, params, results, as_tuple)
   params: per parameter (kind, numpy scalar type, lo, hi) or (-1, dtype, rank);
   results: per result (kind, rank, dtype). A ValueError where the signature
   does not fit the fixed prototype (more than 8 float or NREG + NSTACK
   integer arguments, a rank over 8, more than 16 results). */
static PyObject *make(PyObject *mod, PyObject *a) {
    PyObject *slow, *fail, *main, *pnt, *keep, *fn, *fr, *params, *res;
    int nthreads, as_tuple;
    if (!PyArg_ParseTuple(a, "OOO!O!OOOiO!O!p", &slow, &fail, &PyList_Type, &main,
                          &PyList_Type, &pnt, &keep, &fn, &fr, &nthreads, &PyTuple_Type,
                          &params, &PyTuple_Type, &res, &as_tuple))
        return NULL;
    if (!NREG) {
        PyErr_SetString(PyExc_ValueError, "make: no generic call on this platform");
        return NULL;
    }
    void *fnp, *frp;
    if (as_addr(fn, &fnp) || as_addr(fr, &frp)) return NULL;
    if (!fnp || !frp) {
        PyErr_SetString(PyExc_ValueError, "make: a null address");
        return NULL;
    }
    if (PyTuple_GET_SIZE(res) < 1 || PyTuple_GET_SIZE(res) > MAX_RESULTS ||
        (!as_tuple && PyTuple_GET_SIZE(res) != 1)) {
        PyErr_SetString(PyExc_ValueError, "make: 1 to 16 results (1 unless a tuple)");
        return NULL;
    }
    Entry *e = PyObject_GC_New(Entry, &EntryType);
    if (!e) return NULL;
    memset((char *)e + sizeof(PyObject), 0, sizeof(Entry) - sizeof(PyObject));
    e->vectorcall = entry_vectorcall;
    e->nparams = (int)PyTuple_GET_SIZE(params);
    e->nresults = (int)PyTuple_GET_SIZE(res);
    e->as_tuple = as_tuple;
    e->nthreads = nthreads > 0 ? nthreads : 0;
    e->fn = fnp;
    lib_free = (void (*)(void *))frp;
    e->params = PyMem_Calloc(e->nparams ? e->nparams : 1, sizeof(param_t));
    e->results = PyMem_Calloc(e->nresults, sizeof(result_t));
    PyObject_GC_Track((PyObject *)e);
    if (!e->params || !e->results) { PyErr_NoMemory(); goto bad; }
#define KEEP(field, v) (Py_INCREF(v), e->field = (v))
    KEEP(slow, slow); KEEP(fail, fail); KEEP(main, main); KEEP(pnt, pnt); KEEP(keep, keep);
    int ni = 1, nf = 0;                     /* slot 0: the ctx */
    for (int i = 0; i < e->nparams; i++) {
        param_t *p = &e->params[i];
        PyObject *t = PyTuple_GET_ITEM(params, i), *o;
        if (!PyTuple_Check(t) || !PyTuple_GET_SIZE(t)) goto malformed;
        p->kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, 0));
        if (p->kind >= 0) {
            if (!PyArg_ParseTuple(t, "iOLL", &p->kind, &o, &p->lo, &p->hi)) goto bad;
            if (p->kind > K_BOOL || !PyType_Check(o)) goto malformed;
            p->slot = (p->kind == K_F32 || p->kind == K_F64) ? nf++ : ni++;
        } else {
            if (!PyArg_ParseTuple(t, "iOi", &p->kind, &o, &p->rank)) goto bad;
            if (!PyArray_DescrCheck(o) || p->rank < 1 || p->rank > MAX_RANK) goto malformed;
            p->slot = ni;
            ni += 1 + p->rank;
        }
        Py_INCREF(o); p->type = o;
    }
    for (int k = 0; k < e->nresults; k++) {
        result_t *r = &e->results[k];
        PyObject *o;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(res, k), "iiO", &r->kind, &r->rank, &o)) goto bad;
        if (!PyArray_DescrCheck(o) || r->kind < 0 || r->kind > K_BOOL || r->rank < 0 ||
            r->rank > MAX_RANK)
            goto malformed;
        Py_INCREF(o); r->descr = (PyArray_Descr *)o;
        r->slot = ni;
        ni += r->rank ? 2 : 1;
    }
    if (PyErr_Occurred()) goto bad;
    if (ni > NINT || nf > NFLT) {
        PyErr_Format(PyExc_ValueError, "make: %d integer and %d float arguments (at most %d "
                     "and %d)", ni, nf, NINT, NFLT);
        goto bad;
    }
    return (PyObject *)e;
malformed:
    PyErr_SetString(PyExc_ValueError, "make: a malformed parameter or result");
bad:
    Py_DECREF(e);
    return NULL;
}

/* call_generic(address, ints, float_bits): calls the function at address
   through gen_call with these int64 slots (in order) and double slots (as bit
   patterns), with the GIL held; its int32 result. fastcall.py's ABI probe. */
static PyObject *call_generic(PyObject *mod, PyObject *a) {
    PyObject *fn, *ints, *flts;
    if (!PyArg_ParseTuple(a, "OO!O!", &fn, &PyTuple_Type, &ints, &PyTuple_Type, &flts))
        return NULL;
    void *fnp;
    if (as_addr(fn, &fnp)) return NULL;
    if (!NREG || !fnp || PyTuple_GET_SIZE(ints) > NINT || PyTuple_GET_SIZE(flts) > NFLT) {
        PyErr_SetString(PyExc_ValueError, "call_generic: no generic call, or too many slots");
        return NULL;
    }
    int64_t iv[NINT > 0 ? NINT : 1];
    fslot_t fv[NFLT];
    memset(iv, 0, sizeof iv);
    memset(fv, 0, sizeof fv);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(ints); i++)
        iv[i] = (int64_t)PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(ints, i));
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(flts); i++)
        fv[i].u = PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(flts, i));
    if (PyErr_Occurred()) return NULL;
    int32_t r = gen_call(fnp, iv, fv);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromLong(r);
}

/* retarget(entry, fail, keep, fn): the entry calls the function at address fn
   from now on, with fail and keep replacing its own (the tiered compile's
   swap to the optimised library: wrapper/tiers.py). The signature must be the
   same: the optimised library is the same program's. A call already running
   keeps the function it read; the old library stays loaded (ctypes never
   unloads one). */
static PyObject *retarget(PyObject *mod, PyObject *a) {
    PyObject *ent, *fail, *keep, *fn;
    if (!PyArg_ParseTuple(a, "O!OOO", &EntryType, &ent, &fail, &keep, &fn)) return NULL;
    void *fnp;
    if (as_addr(fn, &fnp)) return NULL;
    if (!fnp) {
        PyErr_SetString(PyExc_ValueError, "retarget: a null address");
        return NULL;
    }
    Entry *e = (Entry *)ent;
    PyObject *old_fail = e->fail, *old_keep = e->keep;
    Py_INCREF(fail); Py_INCREF(keep);
    e->fail = fail; e->keep = keep; e->fn = fnp;
    Py_XDECREF(old_fail); Py_XDECREF(old_keep);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"make", make, METH_VARARGS, "an Entry (see fastcall.py)"},
    {"retarget", retarget, METH_VARARGS, "point an Entry at another library's function"},
    {"call_generic", call_generic, METH_VARARGS, "the ABI probe's call (see fastcall.py)"},
    {NULL}
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_pyshark_cpucall",
    "The C fast path of cpu entry calls (codegen/cpu/fastcall.c).",
    -1, methods
};

PyMODINIT_FUNC PyInit__pyshark_cpucall(void) {
    import_array();             /* returns NULL on failure */
    if (PyType_Ready(&EntryType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&EntryType);
    if (PyModule_AddObject(m, "Entry", (PyObject *)&EntryType) < 0) {
        Py_DECREF(&EntryType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddStringConstant(m, "CONVENTION", CONVENTION) < 0 ||
        PyModule_AddIntConstant(m, "NINT", NINT) < 0 ||
        PyModule_AddIntConstant(m, "NFLT", NFLT) < 0 ||
        PyModule_AddObject(m, "CTX_LAYOUT", Py_BuildValue(
            "(nnnnnn)", (Py_ssize_t)sizeof(pyshark_ctx), (Py_ssize_t)offsetof(pyshark_ctx, code),
            (Py_ssize_t)offsetof(pyshark_ctx, msg), (Py_ssize_t)offsetof(pyshark_ctx, args),
            (Py_ssize_t)offsetof(pyshark_ctx, nthreads),
            (Py_ssize_t)offsetof(pyshark_ctx, sigint))) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
