#ifndef PYSHARK_OCL_RT_H
#define PYSHARK_OCL_RT_H
/* rt.h: the OpenCL runtime of a native opencl module (codegen/opencl/native/),
   shared by its parts: rt_mem.c (errors, device blocks and their cache, host
   mirrors, what host code calls to touch memory), rt_launch.c (kernel launches,
   the begin and end of a call), rt_api.c (contexts, the C API, pyshark_ocl_call).
   build.py compiles each the same way into the runtime object.

   Linked with the module's LLVM object into its shared library (one copy
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
    int32_t listed;         /* in c->mirrored (until psk_end; kept when the slot is freed) */
    int64_t next_free;
} slot;

typedef struct { cl_mem mem; int64_t bytes; } held;

/* the value a kernel argument was last set to (psk_launch sets only what changed) */
typedef struct {
    uint64_t val;           /* its bytes (scalars up to 8, a cl_mem handle) */
    uint64_t epoch;         /* a cl_mem's: the context's mem_epoch when set */
    int32_t size, set;
} karg;

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
    int64_t *mirrored, nmirrored, cap_mirrored; /* slots given a mirror in the running call */
    int32_t mirror_scan;        /* a slot missing from `mirrored` (out of memory): scan all */
    karg **kargs;               /* per kernel: its arguments as last set (NULL: not kept) */
    uint64_t mem_epoch;         /* counts releases of cl_mems (release_mem) */
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

/* -- slots (rt_mem.c) ------------------------------------------------------------------- */
static inline slot *slot_of(ctx_t *c, uint64_t addr) {
    uint64_t k = (addr & ~TAG) >> SLOT_SHIFT;
    return (k > 0 && (int64_t)k < c->nslots && c->slots[k].mem) ? &c->slots[k] : NULL;
}
static inline int64_t off_of(uint64_t addr) { return (int64_t)(addr & OFF_MASK); }

/* rt_mem.c: errors, slots, the free blocks, host mirrors and error checks */
HIDDEN int32_t device_error(ctx_t *c, const char *what, cl_int e);
HIDDEN int32_t fail(ctx_t *c, int32_t code, int32_t msg, int64_t a0, int64_t a1);
HIDDEN int push(int64_t **list, int64_t *n, int64_t *cap, int64_t v);
HIDDEN cl_mem get_buffer(ctx_t *c, int64_t bytes, cl_int *e);
HIDDEN void put_buffer(ctx_t *c, cl_mem m, int64_t bytes);
HIDDEN void drop_mirror(ctx_t *c, slot *s);
HIDDEN void release_mem(ctx_t *c, cl_mem m);
HIDDEN void release_slot(ctx_t *c, int64_t k);
HIDDEN uint64_t adopt(ctx_t *c, cl_mem m, int64_t bytes, int32_t zeroed);
HIDDEN void passed(ctx_t *c);
HIDDEN int32_t flush(ctx_t *c);
HIDDEN int32_t check(ctx_t *c);
HIDDEN void unhand(ctx_t *c, uint64_t addr);
HIDDEN int32_t psk_check(ctx_t *c);
HIDDEN uint64_t psk_alloc(ctx_t *c, int64_t count, int64_t size, int32_t zeroed, int32_t msg);
HIDDEN void psk_free(ctx_t *c, uint64_t addr);
HIDDEN void psk_handout(ctx_t *c, uint64_t addr);
HIDDEN int32_t psk_load(ctx_t *c, uint64_t addr, int64_t size, void *out);
/* rt_api.c: the C API used inside */
API uint64_t pyshark_ocl_upload(ctx_t *c, const void *data, int64_t nbytes);
API uint64_t pyshark_ocl_import(ctx_t *c, void *mem, int64_t offset);
API void pyshark_ocl_array_free(ctx_t *c, uint64_t a);
API void *pyshark_ocl_detach(ctx_t *c, uint64_t a);

#endif
