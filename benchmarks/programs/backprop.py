"""Back-propagation (Rodinia): one training step of a two-layer network, in Futhark's shape.

Ported from Futhark's rodinia/backprop/backprop.fut (`bpnn_train_kernel`),
itself from Rodinia's backprop: each layer's forward pass maps over the
transposed weights a map2 of products, then sums each row; the output and
hidden errors are unzipped maps with a sum; each weight update is an
unzipped map over weight rows of an unzipped map over their elements, with
the layer's values extended by a bias (the tabulate `lyext`). Futhark's
main also builds the network from Sobol numbers; here the weights are
inputs. The hidden layer has 16 units and the output one, as there.
"""
import pyshark.prelude as ps

F32s = ps.Array[ps.f32]
Matrix = ps.Array[ps.Array[ps.f32]]

ETA = 0.3
MOMENTUM = 0.3

__pyshark_cases__ = [
    {"entry": "backprop",
     "args": [[0.5, -1.0], [0.1], [[0.1, 0.2], [0.3, -0.4], [0.5, 0.6]], [[0.2], [0.7], [-0.3]],
              [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]], [[0.0], [0.0], [0.0]]],
     "expected": [0.11982097, 0.028868362,
                  [[0.09380667, 0.20246719], [0.29690334, -0.39876643], [0.50619334, 0.59753287]],
                  [[0.16405371], [0.68426186], [-0.31273735]]]},
]


def squash(x: ps.f32) -> ps.f32:
    return 1.0 / (1.0 + ps.exp(-x))


def fabs(x: ps.f32) -> ps.f32:
    return 0.0 - x if x < 0.0 else x


def bpnn_output_error(target: F32s, output: F32s) -> tuple[ps.f32, F32s]:
    def err(t: ps.f32, o: ps.f32) -> tuple[ps.f32, ps.f32]:
        d = o * (1.0 - o) * (t - o)
        return (0.0 - d if d < 0.0 else d, d)

    errs, delta = ps.unzip(ps.map(err, target, output))
    return (ps.sum(errs), delta)


def bpnn_hidden_error(delta_o: F32s, who: Matrix, hidden: F32s) -> tuple[ps.f32, F32s]:
    def err(hidden_el: ps.f32, who_row: F32s) -> tuple[ps.f32, ps.f32]:
        prods = ps.map(lambda a, b: a * b, delta_o, who_row)
        sumrow = ps.sum(prods)
        new_el = hidden_el * (1.0 - hidden_el) * sumrow
        return (fabs(new_el), new_el)

    errs, delta_h = ps.unzip(ps.map(err, hidden, who))
    return (ps.sum(errs), delta_h)


def bpnn_adjust_weights(delta: F32s, ly: F32s, w: Matrix, oldw: Matrix) -> tuple[Matrix, Matrix]:
    nly = len(w)
    lyext = ps.tabulate(nly, lambda k: ps.f32(1.0) if k < 1 else ly[k - 1])

    def adjust(w_el: ps.f32, oldw_el: ps.f32, delta_el: ps.f32, lyk: ps.f32) -> tuple[ps.f32, ps.f32]:
        new_dw = ETA * delta_el * lyk + MOMENTUM * oldw_el
        return (w_el + new_dw, new_dw)

    return ps.unzip(ps.map(lambda w_row, oldw_row, lyk: ps.unzip(ps.map(
        lambda w_el, oldw_el, delta_el: adjust(w_el, oldw_el, delta_el, lyk),
        w_row, oldw_row, delta)), w, oldw, lyext))


def bpnn_layerforward(l1: F32s, conn: Matrix, conn_fstrow: F32s) -> F32s:
    conn_t = ps.transpose(conn)
    res_map = ps.map(lambda conn_tr_row: ps.map(lambda a, b: a * b, conn_tr_row, l1), conn_t)
    res_tmp = ps.map(lambda row: ps.sum(row), res_map)
    return ps.map(lambda pr, conn0: squash(pr + conn0), res_tmp, conn_fstrow)


@ps.entry
def backprop(input_units: F32s, target: F32s, input_weights: Matrix, hidden_weights: Matrix,
             input_prev_weights: Matrix,
             hidden_prev_weights: Matrix) -> tuple[ps.f32, ps.f32, Matrix, Matrix]:
    """(output error, hidden error, new input weights, new hidden weights); row 0 is the bias."""
    n_in = len(input_units)
    n_hid = len(hidden_weights) - 1
    hidden_units = bpnn_layerforward(input_units, input_weights[1:n_in + 1], input_weights[0])
    output_units = bpnn_layerforward(hidden_units, hidden_weights[1:n_hid + 1], hidden_weights[0])
    out_err, output_delta = bpnn_output_error(target, output_units)
    hid_err, hidden_delta = bpnn_hidden_error(output_delta, hidden_weights[1:n_hid + 1],
                                              hidden_units)
    new_hidden_weights, _hidden_prev = bpnn_adjust_weights(output_delta, hidden_units,
                                                           hidden_weights, hidden_prev_weights)
    new_input_weights, _input_prev = bpnn_adjust_weights(hidden_delta, input_units,
                                                         input_weights, input_prev_weights)
    return (out_err, hid_err, new_input_weights, new_hidden_weights)
