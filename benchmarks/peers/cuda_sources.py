"""The CUDA C of the hand-written peers (cuda_peers.py), readable without CuPy.

Written with a few macros (KERNEL, GLOBAL, GLOBAL_ID) so that the same body
compiles as CUDA through cupy.RawKernel and, in the test suite, as OpenCL C
on PoCL where there is no GPU.
"""

THREADS = 256

NBODY_SOURCE = r"""
KERNEL void nbody_step(GLOBAL const float* xs, GLOBAL const float* ys, GLOBAL const float* zs,
                       GLOBAL const float* ms, GLOBAL const float* vxs,
                       GLOBAL const float* vys, GLOBAL const float* vzs,
                       GLOBAL float* nx, GLOBAL float* ny, GLOBAL float* nz,
                       GLOBAL float* nvx, GLOBAL float* nvy, GLOBAL float* nvz,
                       const float dt, const float eps2, const int n)
{
    const int i = GLOBAL_ID;
    if (i >= n) return;
    const float xi = xs[i], yi = ys[i], zi = zs[i];
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    for (int j = 0; j < n; j++) {
        const float dx = xs[j] - xi;
        const float dy = ys[j] - yi;
        const float dz = zs[j] - zi;
        const float r2 = dx * dx + dy * dy + dz * dz + eps2;
        const float s = ms[j] / (r2 * sqrtf(r2));
        ax += dx * s;
        ay += dy * s;
        az += dz * s;
    }
    const float vx = vxs[i] + ax * dt, vy = vys[i] + ay * dt, vz = vzs[i] + az * dt;
    nvx[i] = vx;
    nvy[i] = vy;
    nvz[i] = vz;
    nx[i] = xi + vx * dt;
    ny[i] = yi + vy * dt;
    nz[i] = zi + vz * dt;
}
"""
CUDA_PREAMBLE = """
#define KERNEL extern "C" __global__
#define GLOBAL
#define GLOBAL_ID ((int)(blockIdx.x * blockDim.x + threadIdx.x))
"""
OPENCL_PREAMBLE = """
#define KERNEL __kernel
#define GLOBAL __global
#define GLOBAL_ID ((int)get_global_id(0))
#define sqrtf sqrt
"""
