/* rt_api.c: contexts and the C API (module.h), pyshark_ocl_call (rt.h has the design) */
#include "rt.h"

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
    c->mem_epoch = 1;
    c->kargs = calloc((size_t)pyshark_ocl_nkernels, sizeof *c->kargs);  /* NULL: none kept */
    for (int32_t k = 0; c->kargs && k < pyshark_ocl_nkernels; k++) {
        const psk_kernel_info *ki = &pyshark_ocl_kernels[k];
        int32_t n = 2 + (ki->heap ? 2 : 0);     /* psk_launch's order: n, err, arena, captures */
        for (int32_t i = 0; i < ki->nargs; i++) n += (ki->kinds[i] & 0x10) ? 2 : 1;
        c->kargs[k] = calloc((size_t)n, sizeof(karg));
    }
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
    free(c->dirty); free(c->pending); free(c->mirrored);
    if (c->kargs)
        for (int32_t k = 0; k < pyshark_ocl_nkernels; k++) free(c->kargs[k]);
    free(c->kargs);
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
        if (e) { release_mem(c, m); device_error(c, "clEnqueueWriteBuffer", e); return 0; }
    }
    uint64_t a = adopt(c, m, bytes, 0);
    if (!a) { release_mem(c, m); device_error(c, "allocating a handle", -6); return 0; }
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
    if (!a) { release_mem(c, mem); device_error(c, "allocating a handle", -6); return 0; }
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
    for (int64_t i = 0; i < c->nheld; i++) release_mem(c, c->held[i].mem);
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
