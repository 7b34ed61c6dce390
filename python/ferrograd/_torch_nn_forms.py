"""The torch.* (ATen-signature) forms of nn ops ferrograd has in nn.functional: torch.conv3d,
torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled),
the losses with an integer `reduction` (1 mean, 2 sum, else none), the dropouts with a required `train`,
the native_* forms that also return their saved statistics, the functional RNN cells and multi-layer RNNs
(torch.lstm/gru/rnn_tanh/rnn_relu over padded input), and the sampling
functions torch.binomial / torch.poisson. Each checks or reorders its arguments and calls the existing
differentiable op (so autograd derives every backward)."""

from . import _C

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _F():
    from .nn import functional
    return functional


def _reduction(r):
    """ATen's reduction enum: 1 mean, 2 sum, any other integer no reduction (as torch's kernels, which
    test for mean and sum only)."""
    if isinstance(r, bool) or not isinstance(r, int):
        raise TypeError(f"reduction must be int, not {type(r).__name__}")
    return _REDUCTIONS.get(r, "none")


# ---- convolution and pooling ---------------------------------------------------------------------------

def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _F().conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _F().conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """The convolution of weight.dim() - 2 spatial dims (1 to 3), transposed or not."""
    F = _F()
    nd = weight.dim() - 2
    if nd not in (1, 2, 3):
        raise RuntimeError(f"Expected 3D, 4D or 5D weight for convolution, but got weight of size {list(weight.shape)}")
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    return fn(input, weight, bias, stride, padding, dilation, groups)


def _stride(stride):
    return None if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else stride


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F().max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F().max_pool1d_with_indices(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def adaptive_max_pool1d(input, output_size):
    """(values, indices), as torch's top-level form."""
    return _F().adaptive_max_pool1d(input, output_size, True)


def constant_pad_nd(input, pad, value=0):
    return _F().pad(input, pad, "constant", value)


def channel_shuffle(input, groups):
    return _F().channel_shuffle(input, groups)


def native_channel_shuffle(input, groups):
    return _F().native_channel_shuffle(input, groups)


def pdist(input, p=2):
    return _F().pdist(input, p)


# ---- normalisation -------------------------------------------------------------------------------------

def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    return _F().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """(layer_norm(input), mean, 1/std) with the statistics kept over the normalised dims."""
    dims = list(range(input.dim() - len(normalized_shape), input.dim()))
    out = _F().layer_norm(input, normalized_shape, weight, bias, eps)
    mean = input.mean(dims, keepdim=True)
    rstd = (input.var(dims, correction=0, keepdim=True) + eps).rsqrt()
    return out, mean, rstd


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """(batch_norm(input), the batch mean, 1/std of the batch) in training; the statistics are empty
    tensors otherwise, as torch's CPU kernel."""
    out = _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        empty = _C.zeros((0,), dtype=input.dtype, device=input.device)
        return out, empty, empty.clone()
    dims = [0] + list(range(2, input.dim()))
    mean = input.mean(dims)
    invstd = (input.var(dims, correction=0) + eps).rsqrt()
    return out, mean, invstd


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """(group_norm(input), mean (N, group), 1/std (N, group))."""
    out = _F().group_norm(input, group, weight, bias, eps)
    grouped = input.reshape(N, group, -1)
    return out, grouped.mean(2), (grouped.var(2, correction=0) + eps).rsqrt()


def frobenius_norm(input, dim, keepdim=False):
    """sqrt(Σ x²) over dim (deprecated in torch, as linalg.vector_norm(input, 2, dim, keepdim))."""
    import warnings

    warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be removed "
                  "in a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead",
                  UserWarning, stacklevel=2)
    from . import linalg
    return linalg.vector_norm(input, 2.0, dim, keepdim)


def nuclear_norm(input, dim=None, keepdim=False):
    """The sum of singular values (deprecated in torch, as linalg.matrix_norm(input, 'nuc', dim, keepdim));
    nuclear_norm(input, keepdim) over the last two dims of a matrix."""
    import warnings

    from . import linalg

    warnings.warn("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed in "
                  "a future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead",
                  UserWarning, stacklevel=2)
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    if dim is None:
        if input.dim() != 2:
            raise RuntimeError(f"Expected a tensor with 2 dimensions, but got a tensor with {input.dim()} dimensions "
                               "instead.")
        dim = (0, 1)
    return linalg.matrix_norm(input, "nuc", dim, keepdim)  # (out=: _out_compositions)


def norm_except_dim(v, pow=2, dim=0):
    from .nn.utils._norm_except_dim import norm_except_dim as impl
    return impl(v, pow, dim)


# ---- dropout -------------------------------------------------------------------------------------------

def alpha_dropout(input, p, train):
    return _F().alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    return _F().alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p, train):
    return _F().feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    return _F().feature_alpha_dropout(input, p, train, inplace=True)


def _feature_dropout(input, p, train, inplace):
    """Zero whole features (dim 1 of a batched input, dim 0 of a 2-d one... as torch: every dim past the
    first two shares one draw) with probability p; scale the rest by 1/(1-p)."""
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not train or p == 0 or input.numel() == 0:
        return input
    shape = list(input.shape[:2]) + [1] * (input.dim() - 2)
    if p == 1:
        mask = _C.zeros(shape, dtype=input.dtype, device=input.device)
    else:
        from ._random_ops import bernoulli
        mask = bernoulli(_C.full(shape, 1 - p, dtype=input.dtype, device=input.device)) / (1 - p)
    return input.mul_(mask) if inplace else input * mask


def feature_dropout(input, p, train):
    return _feature_dropout(input, p, train, False)


def feature_dropout_(input, p, train):
    return _feature_dropout(input, p, train, True)


def native_dropout(input, p, train):
    """(dropout(input), the boolean keep-mask); not training: (a copy of input, all True)."""
    if not train:
        return input.clone(), _C.ones(tuple(input.shape), dtype=_C.bool, device=input.device)
    from ._random_ops import bernoulli
    keep = bernoulli(_C.full(tuple(input.shape), 1 - p, dtype=input.dtype, device=input.device)).to(_C.bool)
    scale = 0.0 if p >= 1 else 1.0 / (1 - p)
    return input * keep.to(input.dtype) * scale, keep


# ---- losses with an integer reduction ------------------------------------------------------------------

def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    return _F().binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                                 pos_weight=pos_weight)


def kl_div(input, target, reduction=1, *, log_target=False):
    return _F().kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    return _F().cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    return _F().hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    return _F().margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, reduction=1):
    return _F().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                    reduction=_reduction(reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False):
    return _F().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction),
                         zero_infinity)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """Rescale in place the rows of `input` that `indices` select whose norm exceeds max_norm; returns input."""
    _F()._embedding_renorm_(input, indices, max_norm, norm_type)
    return input


# ---- sampling grids ------------------------------------------------------------------------------------

_INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    return _F().grid_sample(input, grid, _INTERPOLATION[interpolation_mode], _PADDING[padding_mode], align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    if input.dim() != 4:
        raise RuntimeError(f"grid_sampler(): expected 4D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    if input.dim() != 5:
        raise RuntimeError(f"grid_sampler(): expected 5D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def affine_grid_generator(theta, size, align_corners):
    return _F().affine_grid(theta, size, align_corners)


# ---- functional RNN cells ------------------------------------------------------------------------------

def _gates(input, hx, w_ih, w_hh, b_ih, b_hh):
    gi = input.matmul(w_ih.t())
    gh = hx.matmul(w_hh.t())
    if b_ih is not None:
        gi = gi + b_ih
    if b_hh is not None:
        gh = gh + b_hh
    return gi, gh


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return (gi + gh).tanh()


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return (gi + gh).relu()


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """(h', c') of one LSTM step; hx = (h, c); gates in torch's order i, f, g, o."""
    h, c = hx
    gi, gh = _gates(input, h, w_ih, w_hh, b_ih, b_hh)
    i, f, g, o = (gi + gh).chunk(4, 1)
    c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c2.tanh(), c2


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """h' of one GRU step: r, z from both sides, n = tanh(i_n + r·h_n), h' = n + z·(h - n)."""
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    i_r, i_z, i_n = gi.chunk(3, 1)
    h_r, h_z, h_n = gh.chunk(3, 1)
    r = (i_r + h_r).sigmoid()
    z = (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return n + z * (hx - n)


def _rnn_stack(kind, input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """The multi-layer (bi)directional recurrence of torch.lstm / gru / rnn_tanh / rnn_relu over a padded
    (T, N, C) input (N, T, C when batch_first): params per layer and direction w_ih, w_hh[, b_ih, b_hh];
    hx (layers·directions, N, H) (a pair (h, c) for the LSTM). Returns (output, h_n[, c_n])."""
    from .nn import functional as F

    cell = {"lstm": lstm_cell, "gru": gru_cell, "rnn_tanh": rnn_tanh_cell, "rnn_relu": rnn_relu_cell}[kind]
    per = 4 if has_biases else 2
    dirs = 2 if bidirectional else 1
    if len(params) != per * num_layers * dirs:
        raise RuntimeError(f"{kind}: expected {per * num_layers * dirs} parameters (w_ih, w_hh"
                           f"{', b_ih, b_hh' if has_biases else ''} per layer and direction), got {len(params)}")
    x = input.transpose(0, 1) if batch_first else input
    h0, c0 = (hx[0], hx[1]) if kind == "lstm" else (hx, None)
    last_h, last_c = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = (layer * dirs + d) * per
            w_ih, w_hh = params[k], params[k + 1]
            b_ih, b_hh = (params[k + 2], params[k + 3]) if has_biases else (None, None)
            h = h0[layer * dirs + d]
            c = c0[layer * dirs + d] if c0 is not None else None
            steps = range(x.shape[0]) if d == 0 else range(x.shape[0] - 1, -1, -1)
            seq = [None] * x.shape[0]
            for t in steps:
                if c is not None:
                    h, c = cell(x[t], (h, c), w_ih, w_hh, b_ih, b_hh)
                else:
                    h = cell(x[t], h, w_ih, w_hh, b_ih, b_hh)
                seq[t] = h
            outs.append(_C.stack(seq, 0))
            last_h.append(h)
            if c is not None:
                last_c.append(c)
        x = outs[0] if dirs == 1 else _C.cat(outs, 2)
        if dropout and train and layer < num_layers - 1:
            x = F.dropout(x, dropout, True)
    output = x.transpose(0, 1) if batch_first else x
    if kind == "lstm":
        return output, _C.stack(last_h, 0), _C.stack(last_c, 0)
    return output, _C.stack(last_h, 0)


def lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """The functional LSTM (torch.lstm over a padded input): (output, h_n, c_n)."""
    return _rnn_stack("lstm", input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)


def gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """The functional GRU (torch.gru over a padded input): (output, h_n)."""
    return _rnn_stack("gru", input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)


def rnn_tanh(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """The functional Elman RNN with tanh (torch.rnn_tanh over a padded input): (output, h_n)."""
    return _rnn_stack("rnn_tanh", input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                      batch_first)


def rnn_relu(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """The functional Elman RNN with relu (torch.rnn_relu over a padded input): (output, h_n)."""
    return _rnn_stack("rnn_relu", input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                      batch_first)


# ---- sampling ------------------------------------------------------------------------------------------

def _rng(generator):
    import numpy as np

    from . import randint
    if generator is not None:
        seed = int(randint(0, 2**62, (1,), generator=generator).item())
    else:
        seed = int(randint(0, 2**62, (1,)).item())
    return np.random.default_rng(seed)


def binomial(count, prob, generator=None):
    """Draws of Binomial(count, prob), elementwise (count and prob floating, broadcast); count's dtype."""
    import numpy as np

    if not count.is_floating_point():
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: "
                         f"{_scalar_name(count.dtype)}")
    n = count.detach().cpu().double().numpy()
    p = prob.detach().cpu().double().numpy()
    draws = _rng(generator).binomial(n.astype(np.int64), np.clip(p, 0, 1)).astype(np.float64)
    return _C.from_numpy(np.ascontiguousarray(draws)).to(dtype=count.dtype, device=count.device)


def poisson(input, generator=None):
    """Draws of Poisson(rate = input), elementwise; input's dtype."""
    import numpy as np

    rate = input.detach().cpu().double().numpy()
    if (rate < 0).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    draws = _rng(generator).poisson(rate).astype(np.float64)
    return _C.from_numpy(np.ascontiguousarray(draws)).to(dtype=input.dtype, device=input.device)


def _scalar_name(dtype):
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool"}.get(str(dtype).split(".")[-1], str(dtype))


def conv_tbc(input, weight, bias, pad=0):
    return _F().conv_tbc(input, weight, bias, pad)


__all__ = """conv3d conv_transpose3d convolution max_pool3d max_pool1d_with_indices adaptive_max_pool1d
constant_pad_nd channel_shuffle native_channel_shuffle pdist batch_norm instance_norm native_layer_norm
native_batch_norm native_group_norm frobenius_norm nuclear_norm norm_except_dim alpha_dropout alpha_dropout_
feature_alpha_dropout feature_alpha_dropout_ feature_dropout feature_dropout_ native_dropout
binary_cross_entropy_with_logits kl_div cosine_embedding_loss hinge_embedding_loss margin_ranking_loss
poisson_nll_loss triplet_margin_loss ctc_loss embedding_renorm_ grid_sampler grid_sampler_2d grid_sampler_3d
affine_grid_generator rnn_tanh_cell rnn_relu_cell lstm_cell gru_cell lstm gru rnn_tanh rnn_relu binomial poisson
conv_tbc""".split()
