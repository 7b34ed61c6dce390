"""`ferrograd.Size`: the shape of a tensor, a tuple subclass as torch.Size."""


class Size(tuple):
    __slots__ = ()  # as torch.Size, no attributes of its own (x.shape may hand out one shared object)

    def __repr__(self):
        return f"torch.Size({list(self)!r})"  # torch's spelling: programs print shapes

    __str__ = __repr__

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, key):
        r = tuple.__getitem__(self, key)
        return Size(r) if isinstance(key, slice) else r

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))
