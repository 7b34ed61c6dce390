"""Flatten and Unflatten."""

from .module import Module


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expand dim `dim` into `unflattened_size` (a tuple or list of ints; one may be -1)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be a tuple of ints, but found type {type(unflattened_size).__name__}")
        for i, s in enumerate(unflattened_size):
            if not isinstance(s, int):
                raise TypeError(f"unflattened_size must be tuple of ints, but found element of type {type(s).__name__} "
                                f"at pos {i}")
        self.dim = dim  # as torch's, not checked here (forward refuses a dim that is not an int)
        self.unflattened_size = unflattened_size

    def forward(self, input):
        dim = self.dim + input.dim() if self.dim < 0 else self.dim
        shape = list(input.shape)
        sizes = list(self.unflattened_size)
        if -1 in sizes:
            known = 1
            for s in sizes:
                known *= s if s != -1 else 1
            sizes[sizes.index(-1)] = shape[dim] // known if known else 0
        prod = 1
        for s in sizes:
            prod *= s
        if prod != shape[dim]:
            raise RuntimeError(
                f"unflatten: Provided sizes {list(self.unflattened_size)} don't multiply up to the size of dim "
                f"{self.dim} ({shape[dim]}) in the input tensor"
            )
        return input.reshape((*shape[:dim], *sizes, *shape[dim + 1:]))

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
