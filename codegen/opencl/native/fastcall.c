/* fastcall.c: the C fast path of a native opencl entry's call from Python
   (issue 18 item 4: the host time of a call within 2 us of a bare
   clEnqueueNDRangeKernel + clFinish). fastcall.py builds it at first use, as a
   CPython extension, with the C compiler the runtime is built with, and gives
   each Wrapper attribute of an entry one `Entry`.

   An Entry is a vectorcall object that does, in C, what the Python path
   (Wrapper's bound call -> convert.bind_args -> NativeModule.call ->
   NativeCaller.__call__ -> device_results) does for the common case only:
     - positional arguments, as many as the parameters (no keywords);
     - a scalar parameter given a numpy scalar of its exact type, a Python int
       in range (integer parameters), a Python float (float parameters) or a
       Python bool (bool): exactly the values convert.bind_args' converters
       turn into the same numpy scalar;
     - an array parameter given a DeviceArray (its exact class) of the
       expected dtype and rank, on this module's device, whose block is a
       NativeMem of this library context (it goes in as its handle, tag 2);
     - a result that is a scalar, an array of scalars or a tuple of those,
       with device_arrays=True (DeviceArrays over NativeMems, a scalar as a
       0-d one).
   Anything else calls the Python path (`slow`, the Wrapper's own bound call)
   with the same arguments, so its conversions and its exceptions are the
   ones users get. Under runtime.LOCK (an RLock, held across the call as the
   Python path holds it) it writes the words of NativeCaller's Structure,
   gives the context's dead handles back (its graveyard list), drains the
   device's Python graveyard, sets ctx->sigint, and calls pyshark_ocl_call
   through its address with the GIL released (as ctypes does). A nonzero code
   is handled as NativeCaller does: 8 (Ctrl-C) runs Python's signal handlers
   and calls again; any other code calls `fail(code)`, Python that raises the
   exception the Python path raises.

   The result objects are made without their Python __init__: tp_alloc of the
   NativeMem and DeviceArray classes and their __slots__ set through the
   member descriptors' offsets (found by name when an Entry is made; an Entry
   is refused if one is missing), with the values NativeMem.__init__,
   Device.adopt and DeviceArray._make set. A numpy scalar's value is read at
   its obval (right after the object header, as numpy's PyArrayScalar_VAL);
   fastcall.py checks that on a sample of every scalar type before use.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

typedef int32_t (*ocl_call_fn)(void *ctx, void *packed, const int32_t *lay, uint64_t *w,
                               int64_t ndead, const uint64_t *dead);

enum { K_I8, K_I16, K_I32, K_I64, K_U8, K_U16, K_U32, K_U64, K_F32, K_F64, K_BOOL };
#define INTERRUPTED 8           /* kir.ERROR_CODES["KeyboardInterrupt"] */
#define DEAD_MAX 32             /* module._DEAD_MAX: the size of the dead array */
#define OFF_BITS 40             /* rt.h: a handle's byte offset */
#define OFF_MASK ((1ULL << OFF_BITS) - 1)

enum { DA_DEVICE, DA_MEM, DA_OFF, DA_SHAPE, DA_DTYPE, DA_N };
static const char *DA_SLOTS[DA_N] = {"device", "_mem", "_off", "shape", "dtype"};
enum { M_HANDLE, M_PTR, M_GRAVE, M_DTYPE, M_COUNT, M_HOME, M_ZEROED, M_BUF, M_N };
static const char *M_SLOTS[M_N] = {"handle", "ptr", "grave", "dtype", "count", "home",
                                   "zeroed", "_buf"};

typedef struct {
    int array;                  /* 0 scalar, 1 array of scalars */
    int kind;                   /* scalar: K_* */
    int word;                   /* scalar: its word; array: the first side word */
    int rank, size;             /* array: rank; the element (scalar) bytes */
    int dims[8];                /* array: the words of its dims */
    PyObject *type;             /* scalar: the numpy scalar type */
    PyObject *dtype;            /* array: the numpy dtype */
    long long lo, hi;           /* integer scalar: the range */
} param_t;

typedef struct {
    int rank, size;
    int cells[3];               /* array: handle, cl_mem, first dim; scalar: -, handle, cl_mem */
    PyObject *dtype;
} result_t;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *dict;
    PyObject *slow, *fail, *acquire, *release, *grave, *devgrave, *drain, *dev, *keep, *main;
    PyTypeObject *da_type, *mem_type;
    Py_ssize_t da_off[DA_N], mem_off[M_N];
    char *ctx;
    ocl_call_fn call;
    void *packed;
    const int32_t *lay;
    uint64_t *w;
    uint64_t *dead;
    Py_ssize_t sigint_at;
    int nparams, nresults, as_tuple;
    param_t *params;
    result_t *results;
    unsigned long long fast_calls, slow_calls;
} Entry;

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

static void set_slot(PyObject *o, Py_ssize_t off, PyObject *v) {  /* steals v */
    PyObject *old = SLOT(o, off);
    SLOT(o, off) = v;
    Py_XDECREF(old);
}

/* -- arguments --------------------------------------------------------------------- */

/* the scalar v as parameter p's word; 0: not a common case (the Python path) */
static int put_scalar(const param_t *p, PyObject *v, uint64_t *word) {
    if ((PyObject *)Py_TYPE(v) == p->type) {        /* numpy scalar: its obval */
        memcpy(word, (char *)v + sizeof(PyObject), (size_t)p->size);
        return 1;
    }
    switch (p->kind) {
    case K_F64:
        if (!PyFloat_CheckExact(v)) return 0;
        { double d = PyFloat_AS_DOUBLE(v); memcpy(word, &d, 8); }
        return 1;
    case K_F32:
        if (!PyFloat_CheckExact(v)) return 0;
        { float f = (float)PyFloat_AS_DOUBLE(v); memcpy(word, &f, 4); }   /* numpy's cast */
        return 1;
    case K_BOOL:
        if (v != Py_True && v != Py_False) return 0;
        { uint8_t b = v == Py_True; memcpy(word, &b, 1); }
        return 1;
    default:
        if (!PyLong_CheckExact(v)) return 0;
        {
            int over = 0;
            long long x = PyLong_AsLongLongAndOverflow(v, &over);
            if (over || (x == -1 && PyErr_Occurred())) { PyErr_Clear(); return 0; }
            if (x < p->lo || x > p->hi) return 0;
            memcpy(word, &x, (size_t)p->size);     /* little-endian: the low bytes */
        }
        return 1;
    }
}

static int as_u64(PyObject *o, uint64_t *out) {    /* a size or an offset: 0..2^63-1 */
    if (!o || !PyLong_CheckExact(o)) return 0;
    long long x = PyLong_AsLongLong(o);
    if (x < 0) { PyErr_Clear(); return 0; }
    *out = (uint64_t)x;
    return 1;
}

/* a handle (rt.h: bit 63 set, so a big int, only ever made from a uint64_t by
   NativeCaller or new_mem): its bits, without _PyLong_AsByteArray's general
   conversion (the runtime checks the slot it names) */
static int as_handle(PyObject *o, uint64_t *out) {
    if (!o || !PyLong_CheckExact(o)) return 0;
    unsigned long long x = PyLong_AsUnsignedLongLongMask(o);
    if (x == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
    *out = x;
    return 1;
}

/* a DeviceArray of this context as array parameter p: its handle and dims in
   the words; 0: not a common case */
static int put_array(Entry *e, const param_t *p, PyObject *v, uint64_t *w) {
    if (Py_TYPE(v) != e->da_type) return 0;
    if (SLOT(v, e->da_off[DA_DEVICE]) != e->dev) return 0;
    PyObject *dt = SLOT(v, e->da_off[DA_DTYPE]);
    if (!dt) return 0;
    if (dt != p->dtype) {
        int eq = PyObject_RichCompareBool(dt, p->dtype, Py_EQ);
        if (eq != 1) { PyErr_Clear(); return 0; }
    }
    PyObject *shape = SLOT(v, e->da_off[DA_SHAPE]);
    if (!shape || !PyTuple_CheckExact(shape) || PyTuple_GET_SIZE(shape) != p->rank) return 0;
    PyObject *m = SLOT(v, e->da_off[DA_MEM]);
    if (!m || Py_TYPE(m) != e->mem_type || SLOT(m, e->mem_off[M_GRAVE]) != e->grave) return 0;
    uint64_t h, off;
    if (!as_handle(SLOT(m, e->mem_off[M_HANDLE]), &h) || !as_u64(SLOT(v, e->da_off[DA_OFF]), &off))
        return 0;
    for (int i = 0; i < p->rank; i++) {
        uint64_t d;
        if (!as_u64(PyTuple_GET_ITEM(shape, i), &d)) return 0;
        w[p->dims[i]] = d;
    }
    w[p->word] = h + off * (uint64_t)p->size;
    w[p->word + 2] = 2;
    return 1;
}

/* -- results ------------------------------------------------------------------------ */

static PyObject *new_mem(Entry *e, uint64_t h, uint64_t ptr, PyObject *dtype, uint64_t count) {
    PyObject *m = e->mem_type->tp_alloc(e->mem_type, 0);
    if (!m) return NULL;
    PyObject *hv = PyLong_FromUnsignedLongLong(h & ~OFF_MASK);
    PyObject *pv = PyLong_FromUnsignedLongLong(ptr);
    PyObject *cv = PyLong_FromUnsignedLongLong(count);
    if (!hv || !pv || !cv) {
        Py_XDECREF(hv); Py_XDECREF(pv); Py_XDECREF(cv);
        /* no handle slot: its __del__ gives nothing back; the caller does */
        Py_DECREF(m);
        return NULL;
    }
    set_slot(m, e->mem_off[M_HANDLE], hv);
    set_slot(m, e->mem_off[M_PTR], pv);
    Py_INCREF(e->grave); set_slot(m, e->mem_off[M_GRAVE], e->grave);
    Py_INCREF(dtype); set_slot(m, e->mem_off[M_DTYPE], dtype);
    set_slot(m, e->mem_off[M_COUNT], cv);
    Py_INCREF(e->dev); set_slot(m, e->mem_off[M_HOME], e->dev);    /* Device.adopt */
    Py_INCREF(Py_False); set_slot(m, e->mem_off[M_ZEROED], Py_False);
    Py_INCREF(Py_None); set_slot(m, e->mem_off[M_BUF], Py_None);
    return m;
}

static PyObject *new_array(Entry *e, PyObject *mem, uint64_t off, PyObject *shape,
                           PyObject *dtype) {          /* steals mem and shape */
    PyObject *a = e->da_type->tp_alloc(e->da_type, 0);
    PyObject *ov = PyLong_FromUnsignedLongLong(off);
    if (!a || !ov) {
        Py_XDECREF(a); Py_XDECREF(ov); Py_DECREF(mem); Py_DECREF(shape);
        return NULL;
    }
    Py_INCREF(e->dev); set_slot(a, e->da_off[DA_DEVICE], e->dev);
    set_slot(a, e->da_off[DA_MEM], mem);
    set_slot(a, e->da_off[DA_OFF], ov);
    set_slot(a, e->da_off[DA_SHAPE], shape);
    Py_INCREF(dtype); set_slot(a, e->da_off[DA_DTYPE], dtype);
    return a;
}

/* handles not yet wrapped go to the graveyard (the next call gives them back) */
static void bury(Entry *e, int from) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    for (int k = from; k < e->nresults; k++) {
        const result_t *r = &e->results[k];
        uint64_t h = e->w[r->rank ? r->cells[0] : r->cells[1]] & ~OFF_MASK;
        PyObject *hv = PyLong_FromUnsignedLongLong(h);
        if (hv) { PyList_Append(e->grave, hv); Py_DECREF(hv); }
        PyErr_Clear();
    }
    PyErr_Restore(type, value, tb);
}

/* NativeCaller.device_results (keep 1) as its caller shapes them: one value or a tuple */
static PyObject *results(Entry *e) {
    PyObject *out = e->as_tuple ? PyTuple_New(e->nresults) : NULL;
    if (e->as_tuple && !out) { bury(e, 0); return NULL; }
    uint64_t *w = e->w;
    for (int k = 0; k < e->nresults; k++) {
        const result_t *r = &e->results[k];
        uint64_t h, ptr, count = 1;
        PyObject *shape;
        if (r->rank == 0) {
            h = w[r->cells[1]]; ptr = w[r->cells[2]];
            shape = PyTuple_New(0);
        } else {
            h = w[r->cells[0]]; ptr = w[r->cells[1]];
            shape = PyTuple_New(r->rank);
            for (int i = 0; shape && i < r->rank; i++) {
                uint64_t d = w[r->cells[2] + i];
                PyObject *dv = PyLong_FromUnsignedLongLong(d);
                if (!dv) { Py_CLEAR(shape); break; }
                PyTuple_SET_ITEM(shape, i, dv);
                count *= d;
            }
        }
        PyObject *mem = shape ? new_mem(e, h, ptr, r->dtype, count) : NULL;
        if (!mem) { Py_XDECREF(shape); bury(e, k); Py_XDECREF(out); return NULL; }
        PyObject *a = new_array(e, mem, (h & OFF_MASK) / (uint64_t)r->size, shape, r->dtype);
        if (!a) { bury(e, k + 1); Py_XDECREF(out); return NULL; }
        if (!e->as_tuple) return a;
        PyTuple_SET_ITEM(out, k, a);
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

static int unlock(Entry *e) {          /* keeps a pending exception */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *r = PyObject_CallNoArgs(e->release);
    if (!r) {
        if (type) PyErr_Clear();
        else return -1;
    }
    Py_XDECREF(r);
    PyErr_Restore(type, value, tb);
    return 0;
}

static PyObject *entry_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                  PyObject *kwnames) {
    Entry *e = (Entry *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if ((kwnames && PyTuple_GET_SIZE(kwnames)) || nargs != e->nparams)
        return slow_path(e, args, nargsf, kwnames);
    PyObject *r = PyObject_CallNoArgs(e->acquire);
    if (!r) return NULL;
    Py_DECREF(r);
    uint64_t *w = e->w;
    for (int i = 0; i < e->nparams; i++) {
        const param_t *p = &e->params[i];
        if (!(p->array ? put_array(e, p, args[i], w) : put_scalar(p, args[i], &w[p->word]))) {
            if (unlock(e)) return NULL;
            return slow_path(e, args, nargsf, kwnames);
        }
    }
    if (PyList_GET_SIZE(e->devgrave)) {     /* blocks of dead Python-path arrays */
        r = PyObject_CallNoArgs(e->drain);
        if (!r) { unlock(e); return NULL; }
        Py_DECREF(r);
    }
    int64_t nd = 0;                         /* the context's dead handles, last first */
    Py_ssize_t n = PyList_GET_SIZE(e->grave), keep = n;
    while (keep > 0 && nd < DEAD_MAX) {
        uint64_t h;
        if (!as_handle(PyList_GET_ITEM(e->grave, keep - 1), &h)) break;
        e->dead[nd++] = h;
        keep--;
    }
    if (keep < n && PyList_SetSlice(e->grave, keep, n, NULL) < 0) { unlock(e); return NULL; }
    uint64_t main_ident = 0;                /* module.MAIN_THREAD[0] (set again after a fork) */
    if (PyList_GET_SIZE(e->main)) as_u64(PyList_GET_ITEM(e->main, 0), &main_ident);
    *(int32_t *)(e->ctx + e->sigint_at) = PyThread_get_thread_ident() == main_ident;
    int32_t code;
    Py_BEGIN_ALLOW_THREADS
    code = e->call(e->ctx, e->packed, e->lay, w, nd, e->dead);
    Py_END_ALLOW_THREADS
    while (code == INTERRUPTED) {           /* Ctrl-C: Python's handlers, then again */
        if (PyErr_CheckSignals() < 0) { unlock(e); return NULL; }
        Py_BEGIN_ALLOW_THREADS
        code = e->call(e->ctx, e->packed, e->lay, w, 0, e->dead);
        Py_END_ALLOW_THREADS
    }
    if (code) {
        PyObject *c = PyLong_FromLong(code);
        r = c ? PyObject_CallOneArg(e->fail, c) : NULL;
        Py_XDECREF(c);
        if (r) {                            /* fail() returned: it must raise */
            Py_DECREF(r);
            PyErr_Format(PyExc_SystemError, "pyshark fastcall: the call failed (code %d) "
                         "and no exception was raised", (int)code);
        }
        unlock(e);
        return NULL;
    }
    PyObject *out = results(e);
    if (unlock(e)) { Py_XDECREF(out); return NULL; }
    if (out) e->fast_calls++;
    return out;
}

/* -- the type ------------------------------------------------------------------------ */

static int entry_traverse(PyObject *self, visitproc visit, void *arg) {
    Entry *e = (Entry *)self;
    Py_VISIT(e->dict); Py_VISIT(e->slow); Py_VISIT(e->fail); Py_VISIT(e->acquire);
    Py_VISIT(e->release); Py_VISIT(e->grave); Py_VISIT(e->devgrave); Py_VISIT(e->drain);
    Py_VISIT(e->dev); Py_VISIT(e->keep); Py_VISIT(e->main); Py_VISIT(e->da_type); Py_VISIT(e->mem_type);
    for (int i = 0; e->params && i < e->nparams; i++) {
        Py_VISIT(e->params[i].type); Py_VISIT(e->params[i].dtype);
    }
    for (int i = 0; e->results && i < e->nresults; i++) Py_VISIT(e->results[i].dtype);
    return 0;
}

static int entry_clear(PyObject *self) {
    Entry *e = (Entry *)self;
    Py_CLEAR(e->dict); Py_CLEAR(e->slow); Py_CLEAR(e->fail); Py_CLEAR(e->acquire);
    Py_CLEAR(e->release); Py_CLEAR(e->grave); Py_CLEAR(e->devgrave); Py_CLEAR(e->drain);
    Py_CLEAR(e->dev); Py_CLEAR(e->keep); Py_CLEAR(e->main); Py_CLEAR(e->da_type); Py_CLEAR(e->mem_type);
    for (int i = 0; e->params && i < e->nparams; i++) {
        Py_CLEAR(e->params[i].type); Py_CLEAR(e->params[i].dtype);
    }
    for (int i = 0; e->results && i < e->nresults; i++) Py_CLEAR(e->results[i].dtype);
    /* an Entry cleared by the collector has nothing to call: every call is refused */
    e->nparams = -1;
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

PSK_ENTRY_TYPE("_pyshark_fastcall.Entry",
               "A native opencl entry's call: the common case in C, the rest in Python.");

/* -- making one ------------------------------------------------------------------------ */

static int slot_offsets(PyTypeObject *t, const char **names, int n, Py_ssize_t *out) {
    for (int i = 0; i < n; i++) {
        PyObject *d = NULL;
        for (PyTypeObject *b = t; b && !d; b = b->tp_base)   /* the slot, not a property */
            if (b->tp_dict) {
                PyObject *x = PyDict_GetItemString(b->tp_dict, names[i]);
                if (x && Py_IS_TYPE(x, &PyMemberDescr_Type)) d = x;
            }
        if (!d) {
            PyErr_Format(PyExc_TypeError, "%s has no slot %s", t->tp_name, names[i]);
            return -1;
        }
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type != T_OBJECT_EX && m->type != T_OBJECT) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not an object slot", t->tp_name, names[i]);
            return -1;
        }
        out[i] = m->offset;
    }
    return 0;
}

/* make(slow, fail, lock, grave, devgrave, drain, dev, keep, da_type, mem_type,
        (ctx, call, packed, lay, words, dead, sigint_at), main,
        params, results, as_tuple)
   params: per parameter (0, kind, word, size, type, lo, hi) or
           (1, side word, rank, size, dtype, (dim words...));
   results: per result (rank, size, dtype, (cells...)) */
static PyObject *make(PyObject *mod, PyObject *a) {
    PyObject *slow, *fail, *lock, *grave, *devgrave, *drain, *dev, *keep, *addrs, *main, *params;
    PyObject *res;
    PyTypeObject *da_type, *mem_type;
    int as_tuple;
    if (!PyArg_ParseTuple(a, "OOOO!O!OOOO!O!O!O!O!O!p", &slow, &fail, &lock, &PyList_Type,
                          &grave, &PyList_Type, &devgrave, &drain, &dev, &keep, &PyType_Type,
                          &da_type, &PyType_Type, &mem_type, &PyTuple_Type, &addrs,
                          &PyList_Type, &main, &PyTuple_Type, &params, &PyTuple_Type, &res,
                          &as_tuple))
        return NULL;
    if (PyTuple_GET_SIZE(addrs) != 7) {
        PyErr_SetString(PyExc_ValueError, "make: 7 addresses");
        return NULL;
    }
    Entry *e = PyObject_GC_New(Entry, &EntryType);
    if (!e) return NULL;
    memset((char *)e + sizeof(PyObject), 0, sizeof(Entry) - sizeof(PyObject));
    e->vectorcall = entry_vectorcall;
    e->nparams = (int)PyTuple_GET_SIZE(params);
    e->nresults = (int)PyTuple_GET_SIZE(res);
    e->as_tuple = as_tuple;
    e->params = PyMem_Calloc(e->nparams ? e->nparams : 1, sizeof(param_t));
    e->results = PyMem_Calloc(e->nresults ? e->nresults : 1, sizeof(result_t));
    PyObject_GC_Track((PyObject *)e);
    if (!e->params || !e->results) { PyErr_NoMemory(); goto bad; }
    e->acquire = PyObject_GetAttrString(lock, "acquire");
    e->release = PyObject_GetAttrString(lock, "release");
    if (!e->acquire || !e->release) goto bad;
#define KEEP(field, v) (Py_INCREF(v), e->field = (v))
    KEEP(slow, slow); KEEP(fail, fail); KEEP(grave, grave); KEEP(devgrave, devgrave);
    KEEP(drain, drain); KEEP(dev, dev); KEEP(keep, keep); KEEP(main, main);
    Py_INCREF(da_type); e->da_type = da_type;
    Py_INCREF(mem_type); e->mem_type = mem_type;
    if (slot_offsets(da_type, DA_SLOTS, DA_N, e->da_off) ||
        slot_offsets(mem_type, M_SLOTS, M_N, e->mem_off))
        goto bad;
    void *v[7];
    for (int i = 0; i < 7; i++)
        if (as_addr(PyTuple_GET_ITEM(addrs, i), &v[i])) goto bad;
    e->ctx = v[0]; e->call = (ocl_call_fn)v[1]; e->packed = v[2]; e->lay = v[3];
    e->w = v[4]; e->dead = v[5]; e->sigint_at = (Py_ssize_t)(uintptr_t)v[6];
    for (int i = 0; i < e->nparams; i++) {
        param_t *p = &e->params[i];
        PyObject *t = PyTuple_GET_ITEM(params, i), *o, *dims;
        if (!PyTuple_Check(t) || !PyTuple_GET_SIZE(t)) goto malformed;
        p->array = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, 0));
        if (p->array == 0) {
            if (!PyArg_ParseTuple(t, "iiiiOLL", &p->array, &p->kind, &p->word, &p->size, &o,
                                  &p->lo, &p->hi))
                goto bad;
            Py_INCREF(o); p->type = o;
            if (p->kind < K_I8 || p->kind > K_BOOL || p->size < 1 || p->size > 8) goto malformed;
        } else {
            if (!PyArg_ParseTuple(t, "iiiiOO!", &p->array, &p->word, &p->rank, &p->size, &o,
                                  &PyTuple_Type, &dims))
                goto bad;
            Py_INCREF(o); p->dtype = o;
            if (p->rank < 1 || p->rank > 8 || PyTuple_GET_SIZE(dims) != p->rank || p->size < 1)
                goto malformed;
            for (int k = 0; k < p->rank; k++)
                p->dims[k] = (int)PyLong_AsLong(PyTuple_GET_ITEM(dims, k));
        }
    }
    for (int i = 0; i < e->nresults; i++) {
        result_t *r = &e->results[i];
        PyObject *t = PyTuple_GET_ITEM(res, i), *o, *cells;
        if (!PyArg_ParseTuple(t, "iiOO!", &r->rank, &r->size, &o, &PyTuple_Type, &cells))
            goto bad;
        Py_INCREF(o); r->dtype = o;
        if (PyTuple_GET_SIZE(cells) != 3 || r->size < 1) goto malformed;
        for (int k = 0; k < 3; k++) r->cells[k] = (int)PyLong_AsLong(PyTuple_GET_ITEM(cells, k));
    }
    if (PyErr_Occurred()) goto bad;
    return (PyObject *)e;
malformed:
    PyErr_SetString(PyExc_ValueError, "make: a malformed parameter or result");
bad:
    Py_DECREF(e);
    return NULL;
}

/* scalar_bytes(v, size): the first size bytes of numpy scalar v's value, as an
   Entry reads them (fastcall.py checks them against numpy's own bytes) */
static PyObject *scalar_bytes(PyObject *mod, PyObject *a) {
    PyObject *v;
    int size;
    if (!PyArg_ParseTuple(a, "Oi", &v, &size)) return NULL;
    if (size < 1 || size > 8 || Py_TYPE(v)->tp_basicsize < (Py_ssize_t)sizeof(PyObject) + size) {
        PyErr_SetString(PyExc_ValueError, "scalar_bytes: not a numpy scalar of that size");
        return NULL;
    }
    return PyBytes_FromStringAndSize((char *)v + sizeof(PyObject), size);
}

static PyMethodDef methods[] = {
    {"make", make, METH_VARARGS, "an Entry (see fastcall.py)"},
    {"scalar_bytes", scalar_bytes, METH_VARARGS, "a numpy scalar's value as an Entry reads it"},
    {NULL}
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_pyshark_fastcall",
    "The C fast path of native opencl entry calls (codegen/opencl/native/fastcall.c).",
    -1, methods
};

PyMODINIT_FUNC PyInit__pyshark_fastcall(void) {
    if (PyType_Ready(&EntryType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&EntryType);
    if (PyModule_AddObject(m, "Entry", (PyObject *)&EntryType) < 0) {
        Py_DECREF(&EntryType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
