/* The OpenCL runtime of a native opencl module (codegen/opencl/native/).

   Compiled with the module's LLVM object into its shared library (one copy
   per library; every symbol but the C API is hidden). The entries' host
   code (emit_host.py) calls the psk_* functions below for everything that
   touches the device; the C API (pyshark_ocl_*, declared in capi.py's
   header) makes a context, moves arrays and frees them.

   Device pointers. A kir pointer is 8 bytes in host code. Host memory (an
   entry's out-params, arrays of pointers) is an ordinary address; device
   memory is a tagged value: bit 63 set, the buffer's slot in the context's
   table in bits 40..62, the byte offset in bits 0..39 (buffers up to 1 TiB).
   User-space addresses are below 2^47, so the tag tells the two apart at run
   time, element arithmetic (PtrAdd: getelementptr) works on both, and an
   array of pointers still holds 8-byte elements. An array handle of the C
   API (pyshark_array *) is such a tagged value too: never dereference it.

   The protocol is runtime.py's (docs/opencl-backend.md): launches never
   wait; a kernel that can fail sets the context's error buffer with
   atomic_cmpxchg, read only where the host needs device data (a load, a
   copy to the host, a host Fail, the end of the call); a small buffer that
   host code loads from is read whole into a mirror and served from it until
   a launch that captures it, a copy into it or its free (stores go to the
   mirror and are sent before the next launch, copy or read); the work-item
   heaps (emit_cl.heap_alloc) grow on HEAP_FULL and the entry runs again.

   Ownership. A block allocated by an entry is "fresh" until the entry frees
   it or stores it into an out-param (a result: psk_handout passes it to the
   caller, who frees it with pyshark_ocl_array_free); a result that is an
   input (or one block handed out twice) takes another reference. At the end
   of a call psk_end releases the fresh blocks (only a failed call leaves
   any) and, when the call failed, the results it had handed out.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))
#define HIDDEN __attribute__((visibility("hidden")))

/* -- the OpenCL 1.2 API this file uses (CL/cl.h; no header needed) ------------ */
typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef uint64_t cl_bitfield;
typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_program *cl_program;
typedef struct _cl_kernel *cl_kernel;
typedef struct _cl_event *cl_event;
typedef intptr_t cl_context_properties;

extern cl_int clGetPlatformIDs(cl_uint, cl_platform_id *, cl_uint *);
extern cl_int clGetDeviceIDs(cl_platform_id, cl_bitfield, cl_uint, cl_device_id *, cl_uint *);
extern cl_int clGetDeviceInfo(cl_device_id, cl_uint, size_t, void *, size_t *);
extern cl_context clCreateContext(const cl_context_properties *, cl_uint, const cl_device_id *,
                                  void *, void *, cl_int *);
extern cl_command_queue clCreateCommandQueue(cl_context, cl_device_id, cl_bitfield, cl_int *);
extern cl_int clRetainContext(cl_context);
extern cl_int clReleaseContext(cl_context);
extern cl_int clRetainCommandQueue(cl_command_queue);
extern cl_int clReleaseCommandQueue(cl_command_queue);
extern cl_mem clCreateBuffer(cl_context, cl_bitfield, size_t, void *, cl_int *);
extern cl_int clRetainMemObject(cl_mem);
extern cl_int clReleaseMemObject(cl_mem);
extern cl_int clGetMemObjectInfo(cl_mem, cl_uint, size_t, void *, size_t *);
extern cl_int clEnqueueReadBuffer(cl_command_queue, cl_mem, cl_uint, size_t, size_t, void *,
                                  cl_uint, const cl_event *, cl_event *);
extern cl_int clEnqueueWriteBuffer(cl_command_queue, cl_mem, cl_uint, size_t, size_t,
                                   const void *, cl_uint, const cl_event *, cl_event *);
extern cl_int clEnqueueCopyBuffer(cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t,
                                  cl_uint, const cl_event *, cl_event *);
extern cl_int clEnqueueFillBuffer(cl_command_queue, cl_mem, const void *, size_t, size_t,
                                  size_t, cl_uint, const cl_event *, cl_event *);
extern cl_program clCreateProgramWithSource(cl_context, cl_uint, const char **, const size_t *,
                                            cl_int *);
extern cl_int clBuildProgram(cl_program, cl_uint, const cl_device_id *, const char *, void *,
                             void *);
extern cl_int clGetProgramBuildInfo(cl_program, cl_device_id, cl_uint, size_t, void *, size_t *);
extern cl_int clReleaseProgram(cl_program);
extern cl_kernel clCreateKernel(cl_program, const char *, cl_int *);
extern cl_int clReleaseKernel(cl_kernel);
extern cl_int clGetKernelWorkGroupInfo(cl_kernel, cl_device_id, cl_uint, size_t, void *,
                                       size_t *);
extern cl_int clSetKernelArg(cl_kernel, cl_uint, size_t, const void *);
extern cl_int clEnqueueNDRangeKernel(cl_command_queue, cl_kernel, cl_uint, const size_t *,
                                     const size_t *, const size_t *, cl_uint, const cl_event *,
                                     cl_event *);
extern cl_int clFinish(cl_command_queue);

#define CL_DEVICE_TYPE_ALL 0xFFFFFFFF
#define CL_DEVICE_MAX_COMPUTE_UNITS 0x1002
#define CL_DEVICE_MAX_WORK_GROUP_SIZE 0x1004
#define CL_DEVICE_MAX_MEM_ALLOC_SIZE 0x1010
#define CL_DEVICE_SINGLE_FP_CONFIG 0x101B
#define CL_DEVICE_GLOBAL_MEM_SIZE 0x101F
#define CL_DEVICE_NAME 0x102B
#define CL_DEVICE_EXTENSIONS 0x1030
#define CL_DEVICE_DOUBLE_FP_CONFIG 0x1032
#define CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT (1 << 7)
#define CL_PROGRAM_BUILD_LOG 0x1183
#define CL_KERNEL_WORK_GROUP_SIZE 0x11B0
#define CL_MEM_SIZE 0x1102
#define CL_MEM_READ_WRITE 1

/* -- what the module's LLVM object defines (emit_host.py) ------------------------ */
typedef struct {
    const char *name;
    const uint8_t *kinds;   /* per capture: scalar bytes (bool 1), or 0x10 | element bytes */
    int32_t nargs, can_fail, group, heap;
} psk_kernel_info;
extern const char pyshark_ocl_source[];
extern const char pyshark_ocl_options[];
extern const int32_t pyshark_ocl_nkernels;
extern const int32_t pyshark_ocl_uses_f64;
extern const psk_kernel_info pyshark_ocl_kernels[];
extern int64_t pyshark_error_message(const void *ctx, char *buf, int64_t size);

/* -- codes (kir.ERROR_CODES 1..8; emit_cl.HEAP_FULL 64; the device's own) ---------- */
#define MEMORY_ERROR 6
#define HEAP_FULL 64
#define DEVICE_ERROR 100            /* pyshark.errors.DeviceError */
#define DEVICE_OOM 101              /* DeviceOutOfMemory */
#define DEVICE_BUILD 102            /* DeviceBuildError (the log in the message) */

#define TAG (1ULL << 63)
#define SLOT_SHIFT 40
#define OFF_MASK ((1ULL << SLOT_SHIFT) - 1)
#define MIN_BLOCK 64
#define MIRROR_BYTES (64 * 1024)
#define UPLOAD_COPY_BYTES (1 << 20)
#define MAX_WG 256
#define AHEAD 128                   /* launches queued before a clFinish */
#define HEAP_STRIDE (64 << 10)
#define HELD_MAX 64
#define KEPT_MAX 64                 /* scalar results an entry can leave on the device */

typedef struct {
    cl_mem mem;             /* NULL: the slot is free */
    int64_t bytes;
    int64_t refs;           /* references held by callers (handed-out results, uploads) */
    int32_t fresh;          /* allocated by the running call, not yet freed or handed out */
    int32_t zeroed;         /* from the zeroed blocks (kir Alloc zeroed=True) */
    int32_t kept;           /* a scalar result left here: the entry's own free is a no-op */
    uint8_t *mirror;        /* host copy (loads of small buffers) */
    int64_t dlo, dhi;       /* the mirror's bytes not yet sent (dlo < dhi) */
    int64_t next_free;
} slot;

typedef struct { cl_mem mem; int64_t bytes; } held;

typedef struct pyshark_ocl_ctx {
    /* kir's ctx (48 bytes; the entries read and write these) */
    int32_t code, msg;
    int64_t args[4];
    int32_t nthreads, sigint;
    /* private */
    cl_context context;
    cl_device_id device;
    cl_command_queue queue;
    cl_program program;
    cl_kernel *kernels;
    size_t *kwg;                /* each kernel's work-group size */
    cl_mem err;
    int32_t unchecked, launched;
    slot *slots;
    int64_t nslots, free_head;
    int64_t *fresh_list, nfresh, cap_fresh;     /* slots the running call allocated */
    int64_t *handed, nhanded, cap_handed;       /* results it handed out */
    int64_t *dirty, ndirty, cap_dirty;
    void **pending; int64_t npending, cap_pending;  /* host copies of queued writes */
    held held[HELD_MAX]; int64_t nheld, held_bytes, hold_limit;
    held zeros[HELD_MAX]; int64_t nzeros;
    size_t wg;
    int64_t units, min_group, max_alloc, heap_budget, heap_stride;
    int32_t keep;               /* result loads leave device elements there (pyshark_ocl_call) */
    uint64_t kept[KEPT_MAX];    /* per scalar result: the element psk_load_result left, or 0 */
    char name[256];
    char text[8192];            /* the message of a device error */
} ctx_t;

/* -- errors --------------------------------------------------------------------------- */
static const char *cl_name(cl_int e) {
    switch (e) {
    case -2: return "DEVICE_NOT_AVAILABLE"; case -4: return "MEM_OBJECT_ALLOCATION_FAILURE";
    case -5: return "OUT_OF_RESOURCES"; case -6: return "OUT_OF_HOST_MEMORY";
    case -11: return "BUILD_PROGRAM_FAILURE"; case -30: return "INVALID_VALUE";
    case -36: return "INVALID_COMMAND_QUEUE"; case -38: return "INVALID_MEM_OBJECT";
    case -48: return "INVALID_KERNEL"; case -51: return "INVALID_ARG_SIZE";
    case -54: return "INVALID_WORK_GROUP_SIZE"; case -61: return "INVALID_BUFFER_SIZE";
    default: return "error";
    }
}

static int32_t device_error(ctx_t *c, const char *what, cl_int e) {
    int oom = e == -4 || e == -5 || e == -6 || e == -61;
    c->code = oom ? DEVICE_OOM : DEVICE_ERROR;
    c->msg = -1;
    c->args[0] = e;
    snprintf(c->text, sizeof c->text, "%s failed on the OpenCL device %s: CL error %d (%s)%s",
             what, c->name, (int)e, cl_name(e),
             oom ? "; free DeviceArrays or use smaller inputs" : "");
    return c->code;
}

static int32_t fail(ctx_t *c, int32_t code, int32_t msg, int64_t a0, int64_t a1) {
    c->code = code; c->msg = msg;
    c->args[0] = a0; c->args[1] = a1; c->args[2] = c->args[3] = 0;
    return code;
}

/* -- slots ---------------------------------------------------------------------------- */
static inline slot *slot_of(ctx_t *c, uint64_t addr) {
    uint64_t k = (addr & ~TAG) >> SLOT_SHIFT;
    return (k > 0 && (int64_t)k < c->nslots && c->slots[k].mem) ? &c->slots[k] : NULL;
}
static inline int64_t off_of(uint64_t addr) { return (int64_t)(addr & OFF_MASK); }

static int push(int64_t **list, int64_t *n, int64_t *cap, int64_t v) {
    if (*n == *cap) {
        int64_t nc = *cap ? 2 * *cap : 16;
        int64_t *p = realloc(*list, nc * sizeof **list);
        if (!p) return -1;
        *list = p; *cap = nc;
    }
    (*list)[(*n)++] = v;
    return 0;
}

static int64_t new_slot(ctx_t *c) {
    if (c->free_head) {
        int64_t k = c->free_head;
        c->free_head = c->slots[k].next_free;
        return k;
    }
    if (c->nslots >= (1LL << 22)) return 0;
    if ((c->nslots & (c->nslots - 1)) == 0) {       /* grow at powers of two */
        int64_t cap = c->nslots ? 2 * c->nslots : 16;
        slot *s = realloc(c->slots, cap * sizeof *s);
        if (!s) return 0;
        c->slots = s;
    }
    if (c->nslots == 0) { memset(&c->slots[0], 0, sizeof(slot)); c->nslots = 1; }
    memset(&c->slots[c->nslots], 0, sizeof(slot));
    return c->nslots++;
}

/* a buffer of at least `bytes` (a multiple of MIN_BLOCK) from the held ones or the driver */
static cl_mem get_buffer(ctx_t *c, int64_t bytes, cl_int *e) {
    for (int64_t i = c->nheld - 1; i >= 0; i--) {
        if (c->held[i].bytes == bytes) {
            cl_mem m = c->held[i].mem;
            c->held[i] = c->held[--c->nheld];
            c->held_bytes -= bytes;
            return m;
        }
    }
    cl_mem m = clCreateBuffer(c->context, CL_MEM_READ_WRITE, (size_t)bytes, NULL, e);
    if (!m && c->nheld) {               /* give the held blocks back and try again */
        clFinish(c->queue);
        for (int64_t i = 0; i < c->nheld; i++) clReleaseMemObject(c->held[i].mem);
        c->nheld = 0; c->held_bytes = 0;
        m = clCreateBuffer(c->context, CL_MEM_READ_WRITE, (size_t)bytes, NULL, e);
    }
    return m;
}

static void put_buffer(ctx_t *c, cl_mem m, int64_t bytes) {
    if (c->nheld < HELD_MAX && c->held_bytes + bytes <= c->hold_limit) {
        c->held[c->nheld].mem = m; c->held[c->nheld].bytes = bytes; c->nheld++;
        c->held_bytes += bytes;
    } else {
        clReleaseMemObject(m);
    }
}

static void drop_mirror(ctx_t *c, slot *s) {
    (void)c;
    free(s->mirror); s->mirror = NULL; s->dlo = s->dhi = 0;
}

static void release_slot(ctx_t *c, int64_t k) {
    slot *s = &c->slots[k];
    drop_mirror(c, s);
    if (s->zeroed == -1) {              /* imported or given away: only our reference goes */
        clReleaseMemObject(s->mem);
    } else if (s->zeroed && c->nzeros < HELD_MAX) {
        c->zeros[c->nzeros].mem = s->mem; c->zeros[c->nzeros].bytes = s->bytes; c->nzeros++;
    } else if (s->zeroed) {
        clReleaseMemObject(s->mem);
    } else {
        put_buffer(c, s->mem, s->bytes);
    }
    memset(s, 0, sizeof *s);
    s->next_free = c->free_head;
    c->free_head = k;
}

/* a new slot over cl_mem m; returns its tagged address (0: no slot) */
static uint64_t adopt(ctx_t *c, cl_mem m, int64_t bytes, int32_t zeroed) {
    int64_t k = new_slot(c);
    if (!k) return 0;
    slot *s = &c->slots[k];
    s->mem = m; s->bytes = bytes; s->zeroed = zeroed;
    return TAG | ((uint64_t)k << SLOT_SHIFT);
}

/* -- host copies, flushes and waits ------------------------------------------------------- */
static void passed(ctx_t *c) {          /* the queue is past every command so far */
    for (int64_t i = 0; i < c->npending; i++) free(c->pending[i]);
    c->npending = 0;
    c->launched = 0;
}

static int32_t flush(ctx_t *c) {        /* sends the mirrors' stores */
    for (int64_t i = 0; i < c->ndirty; i++) {
        slot *s = &c->slots[c->dirty[i]];
        if (!s->mem || !s->mirror || s->dlo >= s->dhi) continue;
        cl_int e = clEnqueueWriteBuffer(c->queue, s->mem, 1, (size_t)s->dlo,
                                        (size_t)(s->dhi - s->dlo), s->mirror + s->dlo, 0, NULL,
                                        NULL);
        s->dlo = s->dhi = 0;
        if (e) { c->ndirty = 0; return device_error(c, "clEnqueueWriteBuffer", e); }
    }
    c->ndirty = 0;
    return 0;
}

/* reads the error buffer when a kernel that can fail ran since the last check:
   0, or the kernel's error code (in ctx) */
static int32_t check(ctx_t *c) {
    if (!c->unchecked) return 0;
    int32_t eb[12];
    cl_int e = clEnqueueReadBuffer(c->queue, c->err, 1, 0, sizeof eb, eb, 0, NULL, NULL);
    if (e) return device_error(c, "clEnqueueReadBuffer", e);
    passed(c);
    c->unchecked = 0;
    if (eb[0] == 0) return 0;
    c->code = eb[0]; c->msg = eb[1];
    memcpy(c->args, &eb[2], sizeof c->args);
    static const int32_t zero[12];
    clEnqueueWriteBuffer(c->queue, c->err, 1, 0, sizeof zero, zero, 0, NULL, NULL);
    return c->code;
}

HIDDEN int32_t psk_check(ctx_t *c) {
    int32_t r = flush(c);
    return r ? r : check(c);
}

/* -- what host code calls ----------------------------------------------------------------- */
HIDDEN uint64_t psk_alloc(ctx_t *c, int64_t count, int64_t size, int32_t zeroed, int32_t msg) {
    int64_t n = count < 1 ? 1 : count;
    if (n > (INT64_MAX - MIN_BLOCK) / size || n * size > c->max_alloc) {
        psk_check(c);                   /* an earlier kernel's error comes first */
        if (!c->code) fail(c, MEMORY_ERROR, msg, count, size);
        return 0;
    }
    int64_t bytes = (n * size + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
    cl_mem m = NULL;
    cl_int e = 0;
    if (zeroed) {
        for (int64_t i = 0; i < c->nzeros; i++) {
            if (c->zeros[i].bytes >= bytes) {
                m = c->zeros[i].mem; bytes = c->zeros[i].bytes;
                c->zeros[i] = c->zeros[--c->nzeros];
                break;
            }
        }
        if (!m) {
            m = clCreateBuffer(c->context, CL_MEM_READ_WRITE, (size_t)bytes, NULL, &e);
            if (m) {
                uint8_t z = 0;
                e = clEnqueueFillBuffer(c->queue, m, &z, 1, 0, (size_t)bytes, 0, NULL, NULL);
                if (e) { clReleaseMemObject(m); m = NULL; }
            }
        }
    } else {
        m = get_buffer(c, bytes, &e);
    }
    if (!m) {
        psk_check(c);
        if (!c->code) fail(c, MEMORY_ERROR, msg, count, size);
        return 0;
    }
    uint64_t a = adopt(c, m, bytes, zeroed);
    if (!a || push(&c->fresh_list, &c->nfresh, &c->cap_fresh, (int64_t)(a >> SLOT_SHIFT & ((1LL << 23) - 1)))) {
        clReleaseMemObject(m);
        fail(c, MEMORY_ERROR, msg, count, size);
        return 0;
    }
    slot_of(c, a)->fresh = 1;
    return a;
}

HIDDEN void psk_free(ctx_t *c, uint64_t addr) {
    slot *s = slot_of(c, addr);
    if (!s) return;
    int64_t k = s - c->slots;
    if (s->kept) {                      /* psk_load_result gave the entry's block away */
        s->kept = 0;
    } else if (s->fresh) {
        s->fresh = 0;
        release_slot(c, k);
    } else if (--s->refs <= 0) {
        release_slot(c, k);
    }
}

/* an entry stores a block into its out-param: the caller gets a reference */
HIDDEN void psk_handout(ctx_t *c, uint64_t addr) {
    slot *s = slot_of(c, addr);
    if (!s) return;
    if (s->fresh) { s->fresh = 0; s->refs = 1; }
    else s->refs++;
    push(&c->handed, &c->nhanded, &c->cap_handed, s - c->slots);
}

/* takes back a handed-out block (its reference dropped) */
static void unhand(ctx_t *c, uint64_t addr) {
    slot *s = slot_of(c, addr);
    if (!s) return;
    int64_t k = s - c->slots;
    for (int64_t i = 0; i < c->nhanded; i++) {
        if (c->handed[i] == k) {
            c->handed[i] = c->handed[--c->nhanded];
            if (--s->refs <= 0) release_slot(c, k);
            return;
        }
    }
}

HIDDEN int32_t psk_load(ctx_t *c, uint64_t addr, int64_t size, void *out) {
    slot *s = slot_of(c, addr);
    if (!s) return fail(c, DEVICE_ERROR, -1, 0, 0);
    int64_t off = off_of(addr);
    if (!s->mirror) {
        int32_t r = psk_check(c);
        if (r) return r;
        cl_int e;
        if (s->bytes <= MIRROR_BYTES && (s->mirror = malloc((size_t)s->bytes))) {
            e = clEnqueueReadBuffer(c->queue, s->mem, 1, 0, (size_t)s->bytes, s->mirror, 0,
                                    NULL, NULL);
            if (e) { drop_mirror(c, s); return device_error(c, "clEnqueueReadBuffer", e); }
        } else {
            e = clEnqueueReadBuffer(c->queue, s->mem, 1, (size_t)off, (size_t)size, out, 0,
                                    NULL, NULL);
            if (e) return device_error(c, "clEnqueueReadBuffer", e);
            passed(c);
            return 0;
        }
        passed(c);
    }
    memcpy(out, s->mirror + off, (size_t)size);
    return 0;
}

HIDDEN int32_t psk_store(ctx_t *c, uint64_t addr, int64_t size, const void *val) {
    slot *s = slot_of(c, addr);
    if (!s) return fail(c, DEVICE_ERROR, -1, 0, 0);
    int64_t off = off_of(addr);
    if (s->mirror) {
        memcpy(s->mirror + off, val, (size_t)size);
        if (s->dlo >= s->dhi) {
            s->dlo = off; s->dhi = off + size;
            push(&c->dirty, &c->ndirty, &c->cap_dirty, s - c->slots);
        } else {
            if (off < s->dlo) s->dlo = off;
            if (off + size > s->dhi) s->dhi = off + size;
        }
        return 0;
    }
    cl_int e = clEnqueueWriteBuffer(c->queue, s->mem, 1, (size_t)off, (size_t)size, val, 0,
                                    NULL, NULL);
    return e ? device_error(c, "clEnqueueWriteBuffer", e) : 0;
}

/* dst[0:nbytes] = src[0:nbytes]; either may be host or device memory */
HIDDEN int32_t psk_copy(ctx_t *c, uint64_t dst, uint64_t src, int64_t nbytes) {
    if (nbytes <= 0) return 0;
    int32_t r = flush(c);
    if (r) return r;
    int ddev = (dst & TAG) != 0, sdev = (src & TAG) != 0;
    slot *ds = ddev ? slot_of(c, dst) : NULL, *ss = sdev ? slot_of(c, src) : NULL;
    if ((ddev && !ds) || (sdev && !ss)) return fail(c, DEVICE_ERROR, -1, 0, 0);
    if (ds) drop_mirror(c, ds);
    cl_int e = 0;
    if (ds && ss) {
        e = clEnqueueCopyBuffer(c->queue, ss->mem, ds->mem, (size_t)off_of(src),
                                (size_t)off_of(dst), (size_t)nbytes, 0, NULL, NULL);
    } else if (ds) {
        e = clEnqueueWriteBuffer(c->queue, ds->mem, 1, (size_t)off_of(dst), (size_t)nbytes,
                                 (const void *)(uintptr_t)src, 0, NULL, NULL);
    } else if (ss) {
        if ((r = check(c))) return r;
        if (ss->mirror) memcpy((void *)(uintptr_t)dst, ss->mirror + off_of(src), (size_t)nbytes);
        else {
            e = clEnqueueReadBuffer(c->queue, ss->mem, 1, (size_t)off_of(src), (size_t)nbytes,
                                    (void *)(uintptr_t)dst, 0, NULL, NULL);
            passed(c);
        }
    } else {
        memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, (size_t)nbytes);
    }
    return e ? device_error(c, "copying memory", e) : 0;
}

/* runtime.narrow_group: halve wg (not below `least`) while the groups would
   not cover half of the compute units (docs/opencl-backend.md, "Work-group sizes") */
static size_t narrow_group(size_t wg, int64_t n, int64_t units, int64_t least) {
    while ((int64_t)(wg / 2) >= least && 2 * ((n + (int64_t)wg - 1) / (int64_t)wg) < units)
        wg /= 2;
    return wg;
}

/* kernel k over n work-items; args: one 8-byte value per capture (scalar bits, or a
   tagged device address) */
HIDDEN int32_t psk_launch(ctx_t *c, int32_t k, int64_t n, const uint64_t *args) {
    if (n <= 0) return 0;
    const psk_kernel_info *ki = &pyshark_ocl_kernels[k];
    cl_kernel knl = c->kernels[k];
    int32_t r = flush(c);
    if (r) return r;
    cl_int e = clSetKernelArg(knl, 0, 8, &n);
    e |= clSetKernelArg(knl, 1, sizeof(cl_mem), &c->err);
    cl_uint at = 2;
    uint64_t arena = 0;
    if (ki->heap) {
        uint64_t stride = (uint64_t)c->heap_stride;
        if (n * (int64_t)stride > c->heap_budget) {
            stride = (uint64_t)(c->heap_budget / n) & ~15ULL;
            if (stride < 256) {
                snprintf(c->text, sizeof c->text, "%lld work-items that allocate need more "
                         "than the device's %lld bytes for their heaps", (long long)n,
                         (long long)c->heap_budget);
                return fail(c, DEVICE_OOM, -1, 0, 0);
            }
        }
        arena = psk_alloc(c, n * (int64_t)stride, 1, 0, -1);
        if (!arena) return c->code;
        e |= clSetKernelArg(knl, at++, sizeof(cl_mem), &slot_of(c, arena)->mem);
        e |= clSetKernelArg(knl, at++, 8, &stride);
    }
    for (int32_t i = 0; i < ki->nargs; i++) {
        uint8_t kind = ki->kinds[i];
        if (kind & 0x10) {
            slot *s = slot_of(c, args[i]);
            if (!s) return fail(c, DEVICE_ERROR, -1, 0, 0);
            if (s->mirror) drop_mirror(c, s);
            int64_t eo = off_of(args[i]) / (kind & 0x0F);
            e |= clSetKernelArg(knl, at++, sizeof(cl_mem), &s->mem);
            e |= clSetKernelArg(knl, at++, 8, &eo);
        } else {
            e |= clSetKernelArg(knl, at++, kind, &args[i]);    /* little-endian: low bytes */
        }
    }
    if (e) return device_error(c, "clSetKernelArg", e);
    size_t wg = c->kwg[k];
    if (!ki->group && n < (int64_t)wg * c->units)
        wg = narrow_group(wg, n, c->units, c->min_group);
    size_t global = (size_t)((n + (int64_t)wg - 1) / (int64_t)wg) * wg;
    e = clEnqueueNDRangeKernel(c->queue, knl, 1, NULL, &global, &wg, 0, NULL, NULL);
    if (arena) psk_free(c, arena);      /* later users queue behind this kernel */
    if (e) return device_error(c, "clEnqueueNDRangeKernel", e);
    if (ki->can_fail) c->unchecked = 1;
    if (++c->launched >= AHEAD) {       /* keep the device near: Ctrl-C, memory */
        clFinish(c->queue);
        passed(c);
    }
    return 0;
}

HIDDEN void psk_begin(ctx_t *c) {
    c->code = 0; c->msg = 0;
    c->nfresh = 0; c->nhanded = 0;
    if (c->keep) memset(c->kept, 0, sizeof c->kept);
}

/* The Load of scalar result k's value (emit_host: a load whose value only goes,
   after frees, into the out-param out{k}). In a call that keeps scalars
   (pyshark_ocl_call for a caller of device arrays) an element of a device block
   that no host mirror holds stays there, with no wait: the block is handed out
   (the caller's reference, as an array result's) and ctx->kept[k] is its
   address; *out gets 0. Else psk_load. runtime.Call.load_result is the same on
   the Python host path. */
HIDDEN int32_t psk_load_result(ctx_t *c, uint64_t addr, int64_t size, void *out, int32_t k) {
    slot *s = slot_of(c, addr);
    if (!c->keep || !s || s->mirror || s->zeroed == 1 || k < 0 || k >= KEPT_MAX)
        return psk_load(c, addr, size, out);
    memset(out, 0, (size_t)size);
    if (c->kept[k]) unhand(c, c->kept[k]);      /* a result loaded twice (a loop) */
    if (s->fresh) s->kept = 1;          /* the caller's now: the entry's free is a no-op */
    psk_handout(c, addr);
    c->kept[k] = addr;
    return 0;
}

/* the end of a call (rc: the host code's return): the error check, then the
   fresh blocks; on failure the handed-out results too */
HIDDEN int32_t psk_end(ctx_t *c, int32_t rc) {
    if (rc == 0) {
        rc = flush(c);
        if (!rc) rc = check(c);
    } else if (rc < DEVICE_ERROR && rc != MEMORY_ERROR && c->unchecked) {
        /* a host Fail reported first an earlier kernel's error (psk_check) */
    }
    if (rc && c->unchecked) {           /* clear an unread error behind the kernels */
        static const int32_t zero[12];
        clEnqueueWriteBuffer(c->queue, c->err, 1, 0, sizeof zero, zero, 0, NULL, NULL);
        c->unchecked = 0;
    }
    for (int64_t i = 0; i < c->nfresh; i++) {
        slot *s = &c->slots[c->fresh_list[i]];
        if (s->mem && s->fresh) { s->fresh = 0; release_slot(c, c->fresh_list[i]); }
    }
    if (rc) {
        for (int64_t i = 0; i < c->nhanded; i++) {
            slot *s = &c->slots[c->handed[i]];
            if (s->mem && --s->refs <= 0) release_slot(c, c->handed[i]);
        }
    }
    c->nfresh = c->nhanded = 0;
    for (int64_t k = 1; k < c->nslots; k++)            /* no mirror outlives its call */
        if (c->slots[k].mirror) drop_mirror(c, &c->slots[k]);
    c->ndirty = 0;
    if (rc == HEAP_FULL) {              /* grow the heaps (runtime.grow_heap); the caller runs again */
        int64_t needed = c->args[0];
        int64_t nw = 2 * c->heap_stride, want = (2 * needed + 4095) / 4096 * 4096;
        if (want > nw) nw = want;
        if (needed > c->heap_budget || nw > c->max_alloc) {
            snprintf(c->text, sizeof c->text, "a work-item needs %lld bytes of heap, more "
                     "than the device gives one launch (%lld bytes)", (long long)needed,
                     (long long)c->heap_budget);
            c->code = rc = DEVICE_OOM;
        } else {
            c->heap_stride = nw;
        }
    }
    c->code = rc;
    return rc;
}

/* -- the C API ------------------------------------------------------------------------ */
static int64_t env_int(const char *name, int64_t dflt) {
    const char *v = getenv(name);
    return v && *v ? atoll(v) : dflt;
}

static int32_t setup(ctx_t *c) {
    cl_uint u = 1;
    size_t mwg = 1;
    cl_ulong ma = 0, gm = 0, fp = 0;
    clGetDeviceInfo(c->device, CL_DEVICE_NAME, sizeof c->name - 1, c->name, NULL);
    clGetDeviceInfo(c->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof u, &u, NULL);
    clGetDeviceInfo(c->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof mwg, &mwg, NULL);
    clGetDeviceInfo(c->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof ma, &ma, NULL);
    clGetDeviceInfo(c->device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gm, &gm, NULL);
    clGetDeviceInfo(c->device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
    c->units = u ? u : 1;
    c->nthreads = (int32_t)env_int("PYSHARK_OPENCL_NTHREADS", c->units * 64);
    c->wg = mwg < MAX_WG ? (mwg ? mwg : 1) : MAX_WG;
    c->min_group = env_int("PYSHARK_OPENCL_MIN_GROUP", 8);
    if (c->min_group < 1) c->min_group = 1;
    c->max_alloc = (int64_t)ma;
    int64_t q = (int64_t)(gm / 4) > (64 << 20) ? (int64_t)(gm / 4) : (64 << 20);
    c->heap_budget = q < c->max_alloc ? q : c->max_alloc;
    c->hold_limit = env_int("PYSHARK_OPENCL_POOL_HOLD", q);
    c->heap_stride = HEAP_STRIDE;
    cl_int e;
    if (pyshark_ocl_uses_f64) {
        cl_ulong dfp = 0;
        char ext[4096] = {0};
        clGetDeviceInfo(c->device, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof dfp, &dfp, NULL);
        clGetDeviceInfo(c->device, CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL);
        if (!dfp && !strstr(ext, "cl_khr_fp64")) {
            snprintf(c->text, sizeof c->text, "the OpenCL device %s has no double precision "
                     "(cl_khr_fp64), and this module computes with f64 in kernels", c->name);
            return fail(c, DEVICE_ERROR, -1, 0, 0);
        }
    }
    c->err = clCreateBuffer(c->context, CL_MEM_READ_WRITE, 48, NULL, &e);
    if (!c->err) return device_error(c, "clCreateBuffer", e);
    static const int32_t zero[12];
    if ((e = clEnqueueWriteBuffer(c->queue, c->err, 1, 0, 48, zero, 0, NULL, NULL)))
        return device_error(c, "clEnqueueWriteBuffer", e);
    if (pyshark_ocl_nkernels == 0) return 0;
    /* the program: built once per context, from the source embedded in the library */
    const char *src = pyshark_ocl_source;
    c->program = clCreateProgramWithSource(c->context, 1, &src, NULL, &e);
    if (!c->program) return device_error(c, "clCreateProgramWithSource", e);
    char opts[512];
    snprintf(opts, sizeof opts, "-DPYSHARK_NUM_THREADS=%dL%s %s", (int)c->nthreads,
             (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) ? " -cl-fp32-correctly-rounded-divide-sqrt"
                                                        : "", pyshark_ocl_options);
    if ((e = clBuildProgram(c->program, 1, &c->device, opts, NULL, NULL))) {
        int n = snprintf(c->text, sizeof c->text, "the OpenCL driver of %s could not build "
                         "PyShark's kernels (CL error %d); update the runtime (pyshark "
                         "setup-opencl), choose another device, or use the cpu backend. "
                         "Build log:\n", c->name, (int)e);
        if (n > 0 && n < (int)sizeof c->text)
            clGetProgramBuildInfo(c->program, c->device, CL_PROGRAM_BUILD_LOG,
                                  sizeof c->text - n - 1, c->text + n, NULL);
        c->code = DEVICE_BUILD; c->msg = -1;
        return c->code;
    }
    c->kernels = calloc((size_t)pyshark_ocl_nkernels, sizeof *c->kernels);
    c->kwg = calloc((size_t)pyshark_ocl_nkernels, sizeof *c->kwg);
    if (!c->kernels || !c->kwg) return device_error(c, "allocating kernels", -6);
    for (int32_t k = 0; k < pyshark_ocl_nkernels; k++) {
        const psk_kernel_info *ki = &pyshark_ocl_kernels[k];
        c->kernels[k] = clCreateKernel(c->program, ki->name, &e);
        if (!c->kernels[k]) return device_error(c, "clCreateKernel", e);
        size_t kmax = 1;
        clGetKernelWorkGroupInfo(c->kernels[k], c->device, CL_KERNEL_WORK_GROUP_SIZE,
                                 sizeof kmax, &kmax, NULL);
        if (ki->group) {
            if ((size_t)ki->group > kmax) {
                snprintf(c->text, sizeof c->text, "kernel %s needs work-groups of %d, more "
                         "than the OpenCL device %s runs it with", ki->name, (int)ki->group,
                         c->name);
                return fail(c, DEVICE_ERROR, -1, 0, 0);
            }
            c->kwg[k] = (size_t)ki->group;
        } else {
            c->kwg[k] = kmax < c->wg ? (kmax ? kmax : 1) : c->wg;
        }
    }
    return 0;
}

/* A context over an existing OpenCL context, device and in-order queue (retained;
   pyopencl's, so that its buffers and ours are one memory). Never NULL unless
   out of host memory; check ctx->code (0: ready). */
API ctx_t *pyshark_ocl_ctx_wrap(void *context, void *device, void *queue) {
    ctx_t *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->context = context; c->device = device; c->queue = queue;
    clRetainContext(c->context);
    clRetainCommandQueue(c->queue);
    setup(c);
    return c;
}

/* A context on device `device` of platform `platform` (indexes as `pyshark devices`
   lists them). Never NULL unless out of host memory; check ctx->code. */
API ctx_t *pyshark_ocl_ctx_new(int32_t platform, int32_t device) {
    ctx_t *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    cl_platform_id ps[64];
    cl_device_id ds[64];
    cl_uint np = 0, nd = 0;
    cl_int e = clGetPlatformIDs(64, ps, &np);
    if (e || platform < 0 || (cl_uint)platform >= np) {
        snprintf(c->text, sizeof c->text, "no OpenCL platform %d (%u found, CL error %d)",
                 (int)platform, np, (int)e);
        fail(c, DEVICE_ERROR, -1, 0, 0);
        return c;
    }
    e = clGetDeviceIDs(ps[platform], CL_DEVICE_TYPE_ALL, 64, ds, &nd);
    if (e || device < 0 || (cl_uint)device >= nd) {
        snprintf(c->text, sizeof c->text, "no OpenCL device %d on platform %d (%u found)",
                 (int)device, (int)platform, nd);
        fail(c, DEVICE_ERROR, -1, 0, 0);
        return c;
    }
    c->device = ds[device];
    c->context = clCreateContext(NULL, 1, &c->device, NULL, NULL, &e);
    if (!c->context) { device_error(c, "clCreateContext", e); return c; }
    c->queue = clCreateCommandQueue(c->context, c->device, 0, &e);
    if (!c->queue) { device_error(c, "clCreateCommandQueue", e); return c; }
    setup(c);
    return c;
}

API void pyshark_ocl_ctx_free(ctx_t *c) {
    if (!c) return;
    if (c->queue) clFinish(c->queue);
    passed(c);
    for (int64_t k = 1; k < c->nslots; k++) {
        if (c->slots[k].mem) { free(c->slots[k].mirror); clReleaseMemObject(c->slots[k].mem); }
    }
    for (int64_t i = 0; i < c->nheld; i++) clReleaseMemObject(c->held[i].mem);
    for (int64_t i = 0; i < c->nzeros; i++) clReleaseMemObject(c->zeros[i].mem);
    if (c->kernels)
        for (int32_t k = 0; k < pyshark_ocl_nkernels; k++)
            if (c->kernels[k]) clReleaseKernel(c->kernels[k]);
    if (c->program) clReleaseProgram(c->program);
    if (c->err) clReleaseMemObject(c->err);
    if (c->queue) clReleaseCommandQueue(c->queue);
    if (c->context) clReleaseContext(c->context);
    free(c->kernels); free(c->kwg); free(c->slots); free(c->fresh_list); free(c->handed);
    free(c->dirty); free(c->pending);
    free(c);
}

/* An array in device memory holding a copy of nbytes at data (NULL and ctx->code
   set on failure). Free it with pyshark_ocl_array_free. */
API uint64_t pyshark_ocl_upload(ctx_t *c, const void *data, int64_t nbytes) {
    c->code = 0;
    int64_t bytes = (nbytes < 1 ? 1 : nbytes + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
    if (bytes < MIN_BLOCK) bytes = MIN_BLOCK;
    cl_int e = 0;
    if (nbytes < 0 || bytes > c->max_alloc) { device_error(c, "clCreateBuffer", -61); return 0; }
    cl_mem m = get_buffer(c, bytes, &e);
    if (!m) { device_error(c, "clCreateBuffer", e); return 0; }
    if (nbytes > 0) {
        if (nbytes <= UPLOAD_COPY_BYTES) {          /* copied, sent without waiting */
            void *copy = malloc((size_t)nbytes);
            if (copy && push((int64_t **)&c->pending, &c->npending, &c->cap_pending,
                             (int64_t)(uintptr_t)copy) == 0) {
                memcpy(copy, data, (size_t)nbytes);
                e = clEnqueueWriteBuffer(c->queue, m, 0, 0, (size_t)nbytes, copy, 0, NULL, NULL);
            } else {
                free(copy);
                e = clEnqueueWriteBuffer(c->queue, m, 1, 0, (size_t)nbytes, data, 0, NULL, NULL);
            }
        } else {
            e = clEnqueueWriteBuffer(c->queue, m, 1, 0, (size_t)nbytes, data, 0, NULL, NULL);
        }
        if (e) { clReleaseMemObject(m); device_error(c, "clEnqueueWriteBuffer", e); return 0; }
    }
    uint64_t a = adopt(c, m, bytes, 0);
    if (!a) { clReleaseMemObject(m); device_error(c, "allocating a handle", -6); return 0; }
    slot_of(c, a)->refs = 1;
    return a;
}

/* An array over an OpenCL buffer of this context (retained; byte offset `offset`). */
API uint64_t pyshark_ocl_import(ctx_t *c, void *mem, int64_t offset) {
    size_t size = 0;
    c->code = 0;
    clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, NULL);
    clRetainMemObject(mem);
    uint64_t a = adopt(c, mem, (int64_t)size, 0);
    if (!a) { clReleaseMemObject(mem); device_error(c, "allocating a handle", -6); return 0; }
    slot *s = slot_of(c, a);
    s->refs = 1;
    s->zeroed = -1;                     /* not ours: released, never held */
    return a + (uint64_t)offset;
}

/* The OpenCL buffer of an array, and the array's byte offset in it. */
API void *pyshark_ocl_buffer(ctx_t *c, uint64_t a, int64_t *offset) {
    slot *s = slot_of(c, a);
    if (offset) *offset = off_of(a);
    return s ? s->mem : NULL;
}

/* Copies nbytes of array a to dst, waiting for the kernels that make it; 0 or an
   error code (with the text in pyshark_ocl_error_message). */
API int32_t pyshark_ocl_download(ctx_t *c, uint64_t a, void *dst, int64_t nbytes) {
    c->code = 0;
    slot *s = slot_of(c, a);
    if (!s) { snprintf(c->text, sizeof c->text, "not an array of this context"); return fail(c, DEVICE_ERROR, -1, 0, 0); }
    if (nbytes <= 0) return 0;
    cl_int e = clEnqueueReadBuffer(c->queue, s->mem, 1, (size_t)off_of(a), (size_t)nbytes,
                                   dst, 0, NULL, NULL);
    if (e) return device_error(c, "clEnqueueReadBuffer", e);
    passed(c);
    return 0;
}

/* Drops one reference to array a (0 is allowed). */
API void pyshark_ocl_array_free(ctx_t *c, uint64_t a) {
    slot *s = slot_of(c, a);
    if (!s) return;
    if (--s->refs <= 0) release_slot(c, s - c->slots);
}

/* The cl_mem of array a with a reference the caller owns (retained), and the
   array freed: the buffer never returns to this context's held blocks (the
   Python wrapper wraps an entry's result so as a pyopencl Buffer). */
API void *pyshark_ocl_detach(ctx_t *c, uint64_t a) {
    slot *s = slot_of(c, a);
    if (!s) return NULL;
    cl_mem m = s->mem;
    s->kept = 0;
    clRetainMemObject(m);
    if (s->zeroed != -1 && s->refs == 1) s->zeroed = -1;   /* released, not held */
    pyshark_ocl_array_free(c, a);
    return m;
}

/* The work-item heap stride of the context's kernels (grown on HEAP_FULL). */
API int64_t pyshark_ocl_heap_stride(const ctx_t *c) { return c->heap_stride; }

/* Waits for everything queued. */
API int32_t pyshark_ocl_finish(ctx_t *c) {
    cl_int e = clFinish(c->queue);
    passed(c);
    return e ? device_error(c, "clFinish", e) : 0;
}

/* Returns the held (free) device blocks to the driver. */
API void pyshark_ocl_release_held(ctx_t *c) {
    clFinish(c->queue);
    passed(c);
    for (int64_t i = 0; i < c->nheld; i++) clReleaseMemObject(c->held[i].mem);
    c->nheld = 0; c->held_bytes = 0;
}

/* The last error of ctx as text ("IndexError: ..."; "" when ctx->code is 0), as
   pyshark_error_message: at most size bytes, returns the whole length. */
API int64_t pyshark_ocl_error_message(const ctx_t *c, char *buf, int64_t size) {
    if (c->code >= DEVICE_ERROR || (c->code && c->msg == -1)) {
        const char *kind = c->code == DEVICE_OOM ? "DeviceOutOfMemory"
                         : c->code == DEVICE_BUILD ? "DeviceBuildError" : "DeviceError";
        return snprintf(buf, (size_t)(size > 0 ? size : 0), "%s: %s", kind, c->text);
    }
    return pyshark_error_message(c, buf, size);
}

/* The context's device name (for messages). */
API const char *pyshark_ocl_device_name(const ctx_t *c) { return c->name; }

/* -- one call of an entry from a wrapper (module.py): one foreign call each ------------- */

/* Gives back n arrays that pyshark_ocl_call handed out (their handles): a
   block goes to the context's free blocks, for the next allocation of its size. */
API void pyshark_ocl_reclaim(ctx_t *c, int64_t n, const uint64_t *handles) {
    for (int64_t i = 0; i < n; i++) pyshark_ocl_array_free(c, handles[i]);
}

/* a result leaves the call as an array the caller holds (its slot's reference) */
static uint64_t hand_out(ctx_t *c, uint64_t a) {
    slot *s = slot_of(c, a);
    if (!s) return 0;
    s->kept = 0;
    if (s->zeroed == 1) s->zeroed = 0;  /* written: an ordinary block when it comes back */
    return (uint64_t)(uintptr_t)s->mem;
}

/* Runs entry `packed` (emit_host's NAME.packed: every parameter one 8-byte word of
   w) in one call: first gives back `ndead` arrays (pyshark_ocl_reclaim), imports
   or uploads the array arguments, runs, releases the arguments and (keep) hands
   the results out. The layout `lay` (module.py builds it):
     lay[0] keep (0: no, 1: arrays and scalars, 2: arrays only); lay[1] nin, then per
     array argument: the word of its handle and the first of its three side words
     (source; byte offset or count; 0 a cl_mem to import at that offset, 1 host data
     to upload, 2 an array of this context: the source is its handle); then nres,
     then per result: kind (0 scalar, 1 array), its first cell, element bytes, k.
   An array result's cells are [handle, 0, dims...]; with keep the 0 becomes its
   cl_mem. A scalar's are [value, 0, 0]; with keep 1 they become [value, handle,
   cl_mem] (the element psk_load_result left, or the value uploaded). A handle
   handed out is the caller's (pyshark_ocl_array_free, pyshark_ocl_reclaim or a
   later call's dead list). Returns 0 or the error code (the call then released
   its results). */
API int32_t pyshark_ocl_call(ctx_t *c, int32_t (*packed)(ctx_t *, uint64_t *),
                             const int32_t *lay, uint64_t *w, int64_t ndead,
                             const uint64_t *dead) {
    pyshark_ocl_reclaim(c, ndead, dead);
    c->code = 0;
    int32_t keep = lay[0], nin = lay[1], rc = 0, got = 0;
    const int32_t *in = lay + 2;
    for (; got < nin; got++) {
        const uint64_t *sd = &w[in[2 * got + 1]];
        uint64_t h = sd[2] == 2 ? sd[0]
                   : sd[2] ? pyshark_ocl_upload(c, (const void *)(uintptr_t)sd[0], (int64_t)sd[1])
                           : pyshark_ocl_import(c, (void *)(uintptr_t)sd[0], (int64_t)sd[1]);
        if (!h) { rc = c->code; break; }
        w[in[2 * got]] = h;
    }
    const int32_t *res = in + 2 * nin;
    int32_t nres = res[0];
    res++;
    for (int32_t r = 0; keep == 1 && r < nres; r++)
        if (res[4 * r] == 0) w[res[4 * r + 1] + 1] = 0;
    if (!rc) {
        c->keep = keep == 1;
        rc = packed(c, w);
        c->keep = 0;
    }
    for (int32_t j = 0; j < got; j++)
        if (w[in[2 * j + 1] + 2] != 2) pyshark_ocl_array_free(c, w[in[2 * j]]);
    if (rc || !keep) return c->code = rc;
    for (int32_t r = 0; keep == 1 && r < nres; r++) {  /* every scalar result gets a block */
        const int32_t *d = &res[4 * r];
        if (d[0] == 1) continue;
        uint64_t *cell = &w[d[1]];
        uint64_t a = d[3] < KEPT_MAX ? c->kept[d[3]] : 0;
        if (!a) a = pyshark_ocl_upload(c, cell, d[2]);
        if (!a) {                               /* out of memory: nothing leaves */
            rc = c->code;
            for (int32_t q = 0; q < nres; q++) {
                const int32_t *e = &res[4 * q];
                uint64_t h = e[0] == 1 ? w[e[1]] : w[e[1] + 1];
                if (!h && e[0] == 0 && e[3] < KEPT_MAX) h = c->kept[e[3]];
                pyshark_ocl_array_free(c, h);
            }
            return c->code = rc;
        }
        cell[1] = a;
    }
    for (int32_t r = 0; r < nres; r++) {
        const int32_t *d = &res[4 * r];
        if (d[0] == 1) w[d[1] + 1] = hand_out(c, w[d[1]]);
        else if (keep == 1) w[d[1] + 2] = hand_out(c, w[d[1] + 1]);
    }
    return 0;
}
