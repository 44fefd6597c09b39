"""Black-Scholes: European call and put prices for arrays of f32 options.

The cumulative normal distribution is the usual polynomial approximation
(Abramowitz and Stegun 26.2.17, as in the CUDA SDK and PARSEC versions).
"""
import pyshark.prelude as ps

F32s = ps.Array[ps.f32]

A1 = 0.31938153
A2 = -0.356563782
A3 = 1.781477937
A4 = -1.821255978
A5 = 1.330274429
RSQRT2PI = 0.3989422804014327

__pyshark_cases__ = [
    {"entry": "blackscholes", "args": [[100.0], [100.0], [1.0], 0.05, 0.2],
     "expected": [[10.450586], [5.573526]]},
    {"entry": "blackscholes", "args": [[], [], [], 0.02, 0.3], "expected": [[], []]},
]


def cnd(d: ps.f32) -> ps.f32:
    """The standard normal distribution function at d."""
    k = 1.0 / (1.0 + 0.2316419 * abs(d))
    tail = RSQRT2PI * ps.exp(-0.5 * d * d) * (k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5)))))
    return 1.0 - tail if d > 0.0 else tail


def price(s: ps.f32, x: ps.f32, t: ps.f32, r: ps.f32, v: ps.f32) -> tuple[ps.f32, ps.f32]:
    """(call, put) for spot s, strike x, years to expiry t, rate r, volatility v."""
    sqrt_t = ps.sqrt(t)
    d1 = (ps.log(s / x) + (r + 0.5 * v * v) * t) / (v * sqrt_t)
    d2 = d1 - v * sqrt_t
    c1 = cnd(d1)
    c2 = cnd(d2)
    discounted = x * ps.exp(-r * t)
    return (s * c1 - discounted * c2, discounted * (1.0 - c2) - s * (1.0 - c1))


@ps.entry
def blackscholes(spot: F32s, strike: F32s, years: F32s, rate: ps.f32,
                 volatility: ps.f32) -> tuple[F32s, F32s]:
    """The call prices and the put prices."""
    return ps.unzip(ps.map(lambda s, x, t: price(s, x, t, rate, volatility), spot, strike, years))
