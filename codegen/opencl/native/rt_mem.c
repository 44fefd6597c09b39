/* rt_mem.c: errors, device blocks and their cache, host mirrors, memory for host code (rt.h has the design) */
#include "rt.h"

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

HIDDEN int32_t device_error(ctx_t *c, const char *what, cl_int e) {
    int oom = e == -4 || e == -5 || e == -6 || e == -61;
    c->code = oom ? DEVICE_OOM : DEVICE_ERROR;
    c->msg = -1;
    c->args[0] = e;
    snprintf(c->text, sizeof c->text, "%s failed on the OpenCL device %s: CL error %d (%s)%s",
             what, c->name, (int)e, cl_name(e),
             oom ? "; free DeviceArrays or use smaller inputs" : "");
    return c->code;
}

HIDDEN int32_t fail(ctx_t *c, int32_t code, int32_t msg, int64_t a0, int64_t a1) {
    c->code = code; c->msg = msg;
    c->args[0] = a0; c->args[1] = a1; c->args[2] = c->args[3] = 0;
    return code;
}

/* -- slots ---------------------------------------------------------------------------- */

HIDDEN int push(int64_t **list, int64_t *n, int64_t *cap, int64_t v) {
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
HIDDEN cl_mem get_buffer(ctx_t *c, int64_t bytes, cl_int *e) {
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
        for (int64_t i = 0; i < c->nheld; i++) release_mem(c, c->held[i].mem);
        c->nheld = 0; c->held_bytes = 0;
        m = clCreateBuffer(c->context, CL_MEM_READ_WRITE, (size_t)bytes, NULL, e);
    }
    return m;
}

HIDDEN void put_buffer(ctx_t *c, cl_mem m, int64_t bytes) {
    if (c->nheld < HELD_MAX && c->held_bytes + bytes <= c->hold_limit) {
        c->held[c->nheld].mem = m; c->held[c->nheld].bytes = bytes; c->nheld++;
        c->held_bytes += bytes;
    } else {
        release_mem(c, m);
    }
}

/* Every release of a cl_mem by the context goes through here: once released, the
   handle's value may name another buffer, so the kernel arguments psk_launch kept
   as set (c->kargs) must be set again (a new epoch). A cl_mem the context holds a
   reference to cannot die otherwise, and an argument is only ever one it holds. */
HIDDEN void release_mem(ctx_t *c, cl_mem m) {
    c->mem_epoch++;
    clReleaseMemObject(m);
}

HIDDEN void drop_mirror(ctx_t *c, slot *s) {
    (void)c;
    free(s->mirror); s->mirror = NULL; s->dlo = s->dhi = 0;
}

HIDDEN void release_slot(ctx_t *c, int64_t k) {
    slot *s = &c->slots[k];
    drop_mirror(c, s);
    if (s->zeroed == -1) {              /* imported or given away: only our reference goes */
        release_mem(c, s->mem);
    } else if (s->zeroed && c->nzeros < HELD_MAX) {
        c->zeros[c->nzeros].mem = s->mem; c->zeros[c->nzeros].bytes = s->bytes; c->nzeros++;
    } else if (s->zeroed) {
        release_mem(c, s->mem);
    } else {
        put_buffer(c, s->mem, s->bytes);
    }
    int32_t listed = s->listed;
    memset(s, 0, sizeof *s);
    s->listed = listed;
    s->next_free = c->free_head;
    c->free_head = k;
}

/* a new slot over cl_mem m; returns its tagged address (0: no slot) */
HIDDEN uint64_t adopt(ctx_t *c, cl_mem m, int64_t bytes, int32_t zeroed) {
    int64_t k = new_slot(c);
    if (!k) return 0;
    slot *s = &c->slots[k];
    s->mem = m; s->bytes = bytes; s->zeroed = zeroed;
    return TAG | ((uint64_t)k << SLOT_SHIFT);
}

/* -- host copies, flushes and waits ------------------------------------------------------- */
HIDDEN void passed(ctx_t *c) {          /* the queue is past every command so far */
    for (int64_t i = 0; i < c->npending; i++) free(c->pending[i]);
    c->npending = 0;
    c->launched = 0;
}

HIDDEN int32_t flush(ctx_t *c) {        /* sends the mirrors' stores */
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
HIDDEN int32_t check(ctx_t *c) {
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
                if (e) { release_mem(c, m); m = NULL; }
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
        release_mem(c, m);
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
HIDDEN void unhand(ctx_t *c, uint64_t addr) {
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
            if (!s->listed) {               /* once per slot and call: the list stays short */
                if (push(&c->mirrored, &c->nmirrored, &c->cap_mirrored, s - c->slots))
                    c->mirror_scan = 1;     /* psk_end looks at every slot */
                else
                    s->listed = 1;
            }
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
