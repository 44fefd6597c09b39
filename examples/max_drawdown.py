"""Maximum drawdown of a price series.

The drawdown at day t is the fall from the highest price so far,
(peak_t - price_t) / peak_t with peak_t = max(price_0..price_t); the maximum
drawdown is the largest of them (the worst peak-to-trough loss, a standard
risk measure: Magdon-Ismail and Atiya, "Maximum drawdown", Risk 17(10),
2004). The running peak is an inclusive scan with max (Blelloch, "Prefix
sums and their applications", 1990), the rest a map and a max-reduction.
Prices are positive; an empty or one-day series has no drawdown (0).
"""
import pyshark.prelude as ps

__pyshark_cases__ = [
    {"entry": "running_peak", "args": [[3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0]],
     "expected": [3.0, 3.0, 4.0, 4.0, 5.0, 9.0, 9.0]},
    {"entry": "running_peak", "args": [[]], "expected": []},
    # peak 4 then trough 1: (4 - 1) / 4; later 9 -> 2 is worse: 7 / 9
    {"entry": "max_drawdown", "args": [[3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0]],
     "expected": 0.7777777777777778},
    {"entry": "max_drawdown", "args": [[100.0, 110.0, 121.0]], "expected": 0.0},
    {"entry": "max_drawdown", "args": [[100.0, 50.0, 200.0, 150.0, 300.0]], "expected": 0.5},
    {"entry": "max_drawdown", "args": [[42.0]], "expected": 0.0},
    {"entry": "max_drawdown", "args": [[]], "expected": 0.0},
]


@ps.entry
def running_peak(prices: ps.Array[float]) -> ps.Array[float]:
    """The highest price so far, for every day."""
    return ps.scan(max, ps.lowest(float), prices)


@ps.entry
def max_drawdown(prices: ps.Array[float]) -> float:
    """The largest relative fall from a running peak."""
    peaks = running_peak(prices)
    drawdowns = ps.map(lambda p, peak: (peak - p) / peak, prices, peaks)
    return ps.reduce(max, 0.0, drawdowns)


if __name__ == "__main__":
    import numpy as np

    def numpy_running_peak(prices):
        return np.maximum.accumulate(np.asarray(prices, dtype=np.float64))

    def numpy_max_drawdown(prices):
        prices = np.asarray(prices, dtype=np.float64)
        if prices.size == 0:
            return np.float64(0.0)
        peaks = np.maximum.accumulate(prices)
        return np.float64(max(0.0, ((peaks - prices) / peaks).max()))
