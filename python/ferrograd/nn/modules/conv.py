"""Conv1d, Conv2d, Conv3d (over nn.functional's unfold composition) and ConvTranspose1d, ConvTranspose2d,
ConvTranspose3d, on one `_ConvNd` base (`_ConvTransposeNd` for the transposed ones), as torch's."""

import math

from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


class _ConvNd(Module):
    """The parameters and options of a convolution over `dims` spatial dims; a transposed one's weight is
    (in_channels, out_channels // groups, *kernel_size) and only padding_mode='zeros' is allowed."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, dims,
                 padding_mode="zeros", device=None, dtype=None, *, transposed=False, output_padding=0):
        super().__init__()
        # torch's _single/_pair, first: a sequence is taken as it is, a number repeated
        kernel_size, stride, dilation = (F._ntuple(v, dims) for v in (kernel_size, stride, dilation))
        padding = padding if isinstance(padding, str) else F._ntuple(padding, dims)
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if transposed and padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError("padding_mode must be one of {'replicate', 'zeros', 'reflect', 'circular'}, but got "
                             f"padding_mode={padding_mode!r}")
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        k = kernel_size
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, k
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.groups = groups
        self.padding_mode = padding_mode
        self.transposed, self.output_padding = transposed, F._ntuple(output_padding, dims)
        # F.pad's argument for padding_mode != 'zeros' (last dim first, each side), as torch's
        if isinstance(self.padding, str):
            rp = []
            for d, kk in zip(reversed(self.dilation), reversed(k)):
                total = d * (kk - 1) if self.padding == "same" else 0
                rp += [total // 2, total - total // 2]
            self._reversed_padding_repeated_twice = rp
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(self.padding) for _ in range(2)]
        shape = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        self.weight = Parameter(_C.empty(shape + k, dtype=dtype or _C._get_default_dtype(), device=device))
        if bias:
            self.bias = Parameter(_C.empty(out_channels, dtype=dtype or _C._get_default_dtype(), device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding) if not isinstance(self.padding, str) else True:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def _padded(self, input):
        """The input padded by padding_mode (then the convolution pads nothing), or None for zeros."""
        if self.padding_mode == "zeros":
            return None
        return F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)


class Conv1d(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, 1,
                         padding_mode, device, dtype)

    def forward(self, input):
        padded = self._padded(input)
        if padded is not None:
            return F.conv1d(padded, self.weight, self.bias, self.stride[0], 0, self.dilation[0], self.groups)
        p = self.padding if isinstance(self.padding, str) else self.padding[0]
        return F.conv1d(input, self.weight, self.bias, self.stride[0], p, self.dilation[0], self.groups)


class Conv2d(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, 2,
                         padding_mode, device, dtype)

    def forward(self, input):
        padded = self._padded(input)
        if padded is not None:
            return F.conv2d(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv3d(_ConvNd):
    """3-d convolution (F.conv3d: a sum of 2-d convolutions over the kernel's depth taps)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, 3,
                         padding_mode, device, dtype)

    def forward(self, input):
        padded = self._padded(input)
        if padded is not None:
            return F.conv3d(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return F.conv3d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class _ConvTransposeNd(_ConvNd):
    _dims = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        n = self._dims
        super().__init__(in_channels, out_channels, F._pair(kernel_size, n), F._pair(stride, n), F._pair(padding, n),
                         F._pair(dilation, n), groups, bias, n, padding_mode, device, dtype, transposed=True,
                         output_padding=F._pair(output_padding, n))

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        n = self._dims
        output_size = list(output_size)[-n:]
        spatial = input.shape[-n:]
        pads = []
        for i in range(n):
            base = ((spatial[i] - 1) * self.stride[i] - 2 * self.padding[i]
                    + self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            extra = output_size[i] - base
            if not 0 <= extra < max(self.stride[i], self.dilation[i]):
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {base} to "
                                 f"{base + self.stride[i] - 1} (for an input of {list(spatial)})")
            pads.append(extra)
        return tuple(pads)


class ConvTranspose1d(_ConvTransposeNd):
    _dims = 1

    def forward(self, input, output_size=None):
        op = self._output_padding(input, output_size)
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                                  self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    _dims = 2

    def forward(self, input, output_size=None):
        op = self._output_padding(input, output_size)
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                                  self.dilation)


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution (F.conv_transpose3d: 2-d transposed convolutions per depth tap)."""

    _dims = 3

    def forward(self, input, output_size=None):
        op = self._output_padding(input, output_size)
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                                  self.dilation)
