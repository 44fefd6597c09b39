"""Exhaustive check on the GPU: for every f32 x and d with mantissas in [1, 2),
RN(x / d) == fma(fma(-q0, d, x), r, q0) where r = RN(1/d), q0 = RN(x * r)
(Markstein's correction with a correctly rounded reciprocal). Results scale
exactly by powers of two while every value stays normal. It backs the exact
division through the reciprocal tried in session 30 (branch exp/recip-div;
docs/cpu-backend.md, "Per-thread code"). Needs CuPy and an NVIDIA GPU:
`python scripts/markstein_check.py [SECONDS] [control]` (control: the
uncorrected q0, which must mismatch). On an H100: 7.04e13 pairs, 0
mismatches, 45 s."""
import sys
import time
import cupy as cp
SRC = r'''
extern "C" __global__ void check(unsigned d0, unsigned long long *bad, unsigned *first) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;      // 2^12 threads per d
    unsigned dm = d0 + (t >> 12);
    unsigned xlo = (t & 4095u) << 11;                         // 2^11 numerators each
    float d = __uint_as_float(0x3F800000u | dm);
    float r = __fdiv_rn(1.0f, d);
    unsigned long long nbad = 0;
    for (unsigned k = 0; k < 2048u; ++k) {
        float x = __uint_as_float(0x3F800000u | (xlo + k));
        float q0 = __fmul_rn(x, r);
        float e = __fmaf_rn(-q0, d, x);
        float q1 = CONTROL ? q0 : __fmaf_rn(e, r, q0);
        float ref = __fdiv_rn(x, d);
        if (__float_as_uint(q1) != __float_as_uint(ref)) {
            nbad++;
            if (atomicCAS(first, 0u, 1u) == 0u) { first[1] = dm; first[2] = xlo + k; }
        }
    }
    if (nbad) atomicAdd(bad, nbad);
}
'''
control = len(sys.argv) > 2 and sys.argv[2] == "control"     # q0 alone: must mismatch
k = cp.RawKernel(SRC.replace("CONTROL", "1" if control else "0"), "check", options=("--fmad=false",))
bad = cp.zeros(1, cp.uint64); first = cp.zeros(3, cp.uint32)
D_PER = 1 << 14                      # divisors per launch
t0 = time.time()
limit = float(sys.argv[1]) if len(sys.argv) > 1 else 500
done = 0
for d0 in range(0, 1 << 23, D_PER):
    k(((D_PER << 12) // 256,), (256,), (cp.uint32(d0), bad, first))
    done = d0 + D_PER
    if time.time() - t0 > limit:
        break
cp.cuda.Device().synchronize()
print(f"divisor mantissas checked: {done} of {1 << 23}; pairs {done * (1 << 23):.3e}; "
      f"mismatches {int(bad.get()[0])}; first {first.get().tolist()}; {time.time() - t0:.1f} s")
