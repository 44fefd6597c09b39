/* fastcall_entry.h: what the two C fast paths of entry calls share
   (codegen/cpu/fastcall.c, codegen/opencl/native/fastcall.c): the Entry
   type's Python face (a routine that inspect and pydoc understand, with a
   __dict__ for __name__, __doc__, __signature__ and the Wrapper's marks,
   and its call counters) and reading an address from a Python int.

   Include it after Python.h and structmember.h and the file's own Entry struct, which must have the fields
   `vectorcall`, `dict`, `fast_calls` and `slow_calls`, and after its
   entry_traverse, entry_clear and entry_dealloc; PSK_ENTRY_TYPE(name, doc)
   then defines the static EntryType. Built by codegen/native_ext.py, which
   puts this folder on the include path. */
#ifndef PYSHARK_FASTCALL_ENTRY_H
#define PYSHARK_FASTCALL_ENTRY_H

#if PY_VERSION_HEX < 0x030C0000
#define HAVE_VECTORCALL_FLAG _Py_TPFLAGS_HAVE_VECTORCALL
#else
#define HAVE_VECTORCALL_FLAG Py_TPFLAGS_HAVE_VECTORCALL
#endif

/* An Entry is a routine to inspect and pydoc (a method descriptor that binds to
   nothing, as a staticmethod): help() shows its name, signature and docstring. */
static PyObject *entry_get(PyObject *self, PyObject *obj, PyObject *type) {
    (void)obj; (void)type;
    Py_INCREF(self);
    return self;
}

static PyObject *entry_repr(PyObject *self) {
    Entry *e = (Entry *)self;
    PyObject *name = e->dict ? PyDict_GetItemString(e->dict, "__name__") : NULL;
    return name ? PyUnicode_FromFormat("<pyshark entry %S>", name)
                : PyUnicode_FromString("<pyshark entry>");
}

static PyMemberDef entry_members[] = {
    {"fast_calls", T_ULONGLONG, offsetof(Entry, fast_calls), READONLY,
     "calls that took the C fast path"},
    {"slow_calls", T_ULONGLONG, offsetof(Entry, slow_calls), READONLY,
     "calls handed to the Python path"},
    {NULL}
};

static PyGetSetDef entry_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL}
};

#define PSK_ENTRY_TYPE(NAME, DOC)                                                       \
    static PyTypeObject EntryType = {                                                   \
        PyVarObject_HEAD_INIT(NULL, 0)                                                  \
        .tp_name = NAME,                                                                \
        .tp_basicsize = sizeof(Entry),                                                  \
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | HAVE_VECTORCALL_FLAG,     \
        .tp_doc = DOC,                                                                  \
        .tp_traverse = entry_traverse,                                                  \
        .tp_clear = entry_clear,                                                        \
        .tp_dealloc = entry_dealloc,                                                    \
        .tp_call = PyVectorcall_Call,                                                   \
        .tp_vectorcall_offset = offsetof(Entry, vectorcall),                            \
        .tp_dictoffset = offsetof(Entry, dict),                                         \
        .tp_descr_get = entry_get,                                                      \
        .tp_repr = entry_repr,                                                          \
        .tp_members = entry_members,                                                    \
        .tp_getset = entry_getset,                                                      \
    }

/* a Python int -> an address */
static int as_addr(PyObject *o, void **out) {
    unsigned long long x = PyLong_AsUnsignedLongLong(o);
    if (x == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    *out = (void *)(uintptr_t)x;
    return 0;
}

#endif
