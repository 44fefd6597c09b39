/* A C program against a native opencl module built by
   `pyshark build --backend opencl` from saxpy.py (tests/codegen/opencl/test_ocl_native.py):
   create a context, upload, run entries, read back, check an error message,
   free everything. Prints one line per check; exits 0 when all pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "module.h"

int main(int argc, char **argv) {
    int platform = argc > 1 ? atoi(argv[1]) : 0, device = argc > 2 ? atoi(argv[2]) : 0;
    char msg[512];
    pyshark_ocl_ctx *ctx = pyshark_ocl_ctx_new(platform, device);
    if (!ctx || ctx->code) {
        if (ctx) pyshark_ocl_error_message(ctx, msg, sizeof msg);
        printf("no context: %s\n", ctx ? msg : "out of memory");
        pyshark_ocl_ctx_free(ctx);
        return 1;
    }
    float x[5] = {1, 2, 3, 4, 5}, y[5] = {10, 20, 30, 40, 50}, out[5] = {0};
    pyshark_array dx = pyshark_ocl_upload(ctx, x, sizeof x);
    pyshark_array dy = pyshark_ocl_upload(ctx, y, sizeof y);
    pyshark_array dr = 0;
    int64_t n = 0;
    int32_t rc = pyshark_saxpy(ctx, 2.0f, dx, 5, dy, 5, &dr, &n);
    if (rc == 0) rc = pyshark_ocl_download(ctx, dr, out, (int64_t)sizeof out);
    int ok = rc == 0 && n == 5;
    for (int i = 0; i < 5; i++) ok &= out[i] == 2.0f * x[i] + y[i];
    printf("saxpy %s: %g %g %g %g %g (n=%lld)\n", ok ? "ok" : "FAILED", out[0], out[1], out[2],
           out[3], out[4], (long long)n);
    /* a result fed back in without leaving the device */
    float total = 0;
    rc = pyshark_total(ctx, dr, 5, &total);
    int ok2 = rc == 0 && total == 2 * 15 + 150;
    printf("total %s: %g\n", ok2 ? "ok" : "FAILED", total);
    /* a ShapeError, as text */
    pyshark_array bad = 0;
    int64_t bn = 0;
    rc = pyshark_saxpy(ctx, 1.0f, dx, 5, dy, 4, &bad, &bn);
    pyshark_ocl_error_message(ctx, msg, sizeof msg);
    int ok3 = rc == 4 && strncmp(msg, "ShapeError: map: arrays differ in length", 40) == 0;
    printf("error %s: %d %s\n", ok3 ? "ok" : "FAILED", rc, msg);
    pyshark_ocl_array_free(ctx, dr);
    pyshark_ocl_array_free(ctx, dx);
    pyshark_ocl_array_free(ctx, dy);
    pyshark_ocl_ctx_free(ctx);
    return ok && ok2 && ok3 ? 0 : 1;
}
