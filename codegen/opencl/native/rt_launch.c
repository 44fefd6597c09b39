/* rt_launch.c: kernel launches and the begin and end of an entry's call (rt.h has the design) */
#include "rt.h"

/* runtime.narrow_group: halve wg (not below `least`) while the groups would
   not cover half of the compute units (docs/opencl-backend.md, "Work-group sizes") */
static size_t narrow_group(size_t wg, int64_t n, int64_t units, int64_t least) {
    while ((int64_t)(wg / 2) >= least && 2 * ((n + (int64_t)wg - 1) / (int64_t)wg) < units)
        wg /= 2;
    return wg;
}

/* clSetKernelArg unless argument i of kernel knl already holds that value: a scalar
   set before, or a cl_mem set since the last release of any cl_mem (release_mem: a
   handle's value names the same buffer while the context holds it). The driver
   copies an argument's value at clSetKernelArg and every later enqueue uses it
   until it is set again (clSetKernelArg in the OpenCL spec); the driver's floor
   (benchmarks/ocl_launch_floor.py) sets them once too. */
static inline cl_int set_arg(ctx_t *c, karg *a, cl_kernel knl, cl_uint i, size_t size,
                             const void *v, int mem) {
    uint64_t x;
    switch (size) {                     /* the value's bits (sizes 1, 2, 4, 8) */
    case 1: { uint8_t b; memcpy(&b, v, 1); x = b; break; }
    case 2: { uint16_t b; memcpy(&b, v, 2); x = b; break; }
    case 4: { uint32_t b; memcpy(&b, v, 4); x = b; break; }
    case 8: memcpy(&x, v, 8); break;
    default:                            /* (no other size is made): not kept */
        if (a) a[i].set = 0;
        return clSetKernelArg(knl, i, size, v);
    }
    if (a && a[i].set && a[i].val == x && a[i].size == (int32_t)size
            && (!mem || a[i].epoch == c->mem_epoch))
        return 0;
    cl_int e = clSetKernelArg(knl, i, size, v);
    if (a) { a[i].val = x; a[i].size = (int32_t)size; a[i].epoch = c->mem_epoch; a[i].set = !e; }
    return e;
}

/* kernel k over n work-items; args: one 8-byte value per capture (scalar bits, or a
   tagged device address) */
HIDDEN int32_t psk_launch(ctx_t *c, int32_t k, int64_t n, const uint64_t *args) {
    if (n <= 0) return 0;
    const psk_kernel_info *ki = &pyshark_ocl_kernels[k];
    cl_kernel knl = c->kernels[k];
    karg *ka = c->kargs ? c->kargs[k] : NULL;
    int32_t r = flush(c);
    if (r) return r;
    cl_int e = set_arg(c, ka, knl, 0, 8, &n, 0);
    e |= set_arg(c, ka, knl, 1, sizeof(cl_mem), &c->err, 1);
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
        e |= set_arg(c, ka, knl, at++, sizeof(cl_mem), &slot_of(c, arena)->mem, 1);
        e |= set_arg(c, ka, knl, at++, 8, &stride, 0);
    }
    for (int32_t i = 0; i < ki->nargs; i++) {
        uint8_t kind = ki->kinds[i];
        if (kind & 0x10) {
            slot *s = slot_of(c, args[i]);
            if (!s) return fail(c, DEVICE_ERROR, -1, 0, 0);
            if (s->mirror) drop_mirror(c, s);
            int64_t eo = off_of(args[i]) / (kind & 0x0F);
            e |= set_arg(c, ka, knl, at++, sizeof(cl_mem), &s->mem, 1);
            e |= set_arg(c, ka, knl, at++, 8, &eo, 0);
        } else {
            e |= set_arg(c, ka, knl, at++, kind, &args[i], 0);    /* little-endian: low bytes */
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
    if (c->mirror_scan) {               /* no mirror outlives its call */
        for (int64_t k = 1; k < c->nslots; k++) {
            c->slots[k].listed = 0;
            if (c->slots[k].mirror) drop_mirror(c, &c->slots[k]);
        }
        c->mirror_scan = 0;
    } else {                            /* the slots psk_load gave one (not every slot) */
        for (int64_t i = 0; i < c->nmirrored; i++) {
            slot *s = &c->slots[c->mirrored[i]];
            s->listed = 0;
            if (s->mirror) drop_mirror(c, s);
        }
    }
    c->nmirrored = 0;
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
