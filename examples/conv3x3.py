"""3x3 convolution of a 2-D image (image filtering, as in image processing).

out[i, j] = sum over di, dj in 0..2 of img[i + di, j + dj] * k[di, dj]

i.e. cross-correlation with the 3x3 filter `k`, which is what image
processing and deep-learning libraries call "convolution" (e.g.
scipy.signal.correlate2d, torch.nn.functional.conv2d). Two border modes:

- `conv3x3_valid`: only where the whole window fits ("valid" mode), so an
  h x w image gives an (h-2) x (w-2) result (empty when h < 3 or w < 3);
- `conv3x3_clamp`: same-size result centred on each pixel, reading pixels
  outside the image from the nearest edge pixel ("clamp to edge", OpenCL's
  CLK_ADDRESS_CLAMP_TO_EDGE, numpy.pad mode "edge").
"""
import pyshark.prelude as ps

__pyshark_cases__ = [
    # 3x3 image, box filter: one output, the sum of all pixels
    {"entry": "conv3x3_valid", "args": [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]],
                                        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]],
     "expected": [[45.0]]},
    # 4x5 image (not square, not powers of two), Laplace filter on x + 10*y (linear: 0 inside)
    {"entry": "conv3x3_valid",
     "args": [[[0.0, 1.0, 2.0, 3.0, 4.0], [10.0, 11.0, 12.0, 13.0, 14.0],
               [20.0, 21.0, 22.0, 23.0, 24.0], [30.0, 31.0, 32.0, 33.0, 34.0]],
              [[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]]],
     "expected": [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]},
    # an asymmetric filter picks the top-left neighbour: out[i, j] = img[i, j]
    {"entry": "conv3x3_valid",
     "args": [[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0]],
              [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]],
     "expected": [[1.0, 2.0]]},
    # too small for one window: empty result
    {"entry": "conv3x3_valid", "args": [[[1.0, 2.0], [3.0, 4.0]],
                                        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]],
     "expected": []},
    # clamped borders, box filter on a 2x3 image
    {"entry": "conv3x3_clamp", "args": [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],
                                        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]],
     "expected": [[21.0, 27.0, 33.0], [30.0, 36.0, 42.0]]},
    # one pixel, clamped: every tap reads it
    {"entry": "conv3x3_clamp", "args": [[[2.0]], [[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]]],
     "expected": [[0.0]]},
    # no rows
    {"entry": "conv3x3_clamp", "args": [[], [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]],
     "expected": []},
]


@ps.entry
def conv3x3_valid(img: ps.Array[ps.Array[ps.f32]], k: ps.Array[ps.Array[ps.f32]]
                  ) -> ps.Array[ps.Array[ps.f32]]:
    """The filter applied where it fits entirely inside the image."""
    h = len(img)
    w = len(img[0]) if h > 0 else 0

    def pixel(i: int, j: int) -> ps.f32:
        acc = ps.f32(0.0)
        for di in range(3):
            for dj in range(3):
                acc += img[i + di, j + dj] * k[di, dj]
        return acc

    return ps.tabulate_2d(max(h - 2, 0), max(w - 2, 0), pixel)


@ps.entry
def conv3x3_clamp(img: ps.Array[ps.Array[ps.f32]], k: ps.Array[ps.Array[ps.f32]]
                  ) -> ps.Array[ps.Array[ps.f32]]:
    """Same-size result; pixels outside the image repeat the nearest edge pixel."""
    h = len(img)
    w = len(img[0]) if h > 0 else 0

    def pixel(i: int, j: int) -> ps.f32:
        acc = ps.f32(0.0)
        for di in range(3):
            for dj in range(3):
                y = min(max(i + di - 1, 0), h - 1)
                x = min(max(j + dj - 1, 0), w - 1)
                acc += img[y, x] * k[di, dj]
        return acc

    return ps.tabulate_2d(h, w, pixel)


# NumPy references (plain numpy, what users compare against). They live under the
# __main__ guard because every top-level def of a PyShark module is translated.
if __name__ == "__main__":
    import numpy as np

    def _image(img):
        img = np.asarray(img, dtype=np.float32)
        return img.reshape(0, 0) if img.ndim == 1 else img

    def numpy_conv3x3_valid(img, k):
        img = _image(img)
        k = np.asarray(k, dtype=np.float32)
        h, w = max(img.shape[0] - 2, 0), max(img.shape[1] - 2, 0)
        out = np.zeros((h, w), dtype=np.float32)
        for di in range(3):
            for dj in range(3):
                out += img[di:di + h, dj:dj + w] * k[di, dj]
        return out

    def numpy_conv3x3_clamp(img, k):
        img = _image(img)
        if img.size == 0:
            return img.copy()
        return numpy_conv3x3_valid(np.pad(img, 1, mode="edge"), k)
