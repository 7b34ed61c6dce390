"""A seedable random generator for the places torch takes `generator=` (DataLoader shuffling,
random_split, nn.init), and `randperm`, which the engine does not have yet.

`Generator` mirrors torch.Generator's seeding API over NumPy's PCG64; it is not bit-compatible with
torch's streams. Without a generator, draws come from ferrograd's global RNG (`manual_seed`), so a
seeded program is reproducible either way. A native generator would replace this module.
"""

import numpy as np

from .. import _C


class Generator:
    def __init__(self, device="cpu"):
        self.device = _C.device(device) if isinstance(device, str) else device
        self.manual_seed(67280421310721)  # torch's default seed

    def manual_seed(self, seed):
        self._seed = int(seed)
        self._np = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self):
        return self.manual_seed(int(np.random.SeedSequence().entropy) % (1 << 63))._seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        return self._np.bit_generator.state

    def set_state(self, state):
        self._np.bit_generator.state = state
        return self


class _DefaultGenerator(Generator):
    """torch.default_generator: the global generator (manual_seed, get_rng_state, ...) as a Generator
    object. Draws made with it come from the global stream, as without a generator."""

    def __init__(self):
        self.device = _C.device("cpu")

    def manual_seed(self, seed):
        _C.manual_seed(int(seed))
        return self

    def seed(self):
        from ..random import seed

        return seed()

    def initial_seed(self):
        return _C.initial_seed()

    def get_state(self):
        return _C.get_rng_state()

    def set_state(self, state):
        _C.set_rng_state(state)
        return self

    @property
    def _np(self):
        return np.random.Generator(np.random.PCG64(int(_C.randint(0, 1 << 62, ()).item())))

    def __repr__(self):
        return "<torch._C.Generator object (the default generator)>"


default_generator = _DefaultGenerator()


def _numpy_rng(generator, fname="randperm"):
    """The NumPy generator to draw from: `generator`'s, or one seeded from ferrograd's global RNG."""
    check(generator, fname)
    if generator is not None:
        return generator._np
    return np.random.Generator(np.random.PCG64(int(_C.randint(0, 1 << 62, ()).item())))


def randperm(n, generator=None, dtype=None):
    """A random permutation of 0..n-1 (torch.randperm)."""
    perm = _numpy_rng(generator).permutation(n).astype(np.int64)
    return _C.from_numpy(perm) if dtype is None else _C.from_numpy(perm).to(dtype)


def uniform(shape, dtype, generator=None):
    """U[0, 1) samples: the engine's when there is no generator."""
    check(generator, "uniform_")
    if generator is None:
        return _C.rand(tuple(shape), dtype=dtype)
    return _C.from_numpy(generator._np.random(tuple(shape))).to(dtype)


def normal(shape, dtype, generator=None):
    """N(0, 1) samples: the engine's when there is no generator."""
    check(generator, "normal_")
    if generator is None:
        return _C.randn(tuple(shape), dtype=dtype)
    return _C.from_numpy(generator._np.standard_normal(tuple(shape))).to(dtype)


def check(generator, fname):
    """torch's TypeError for a generator= that is no Generator."""
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"{fname}(): argument 'generator' must be torch.Generator, not {type(generator).__name__}")


def draw_like(kind, like, generator, low=0, high=0):
    """rand/randn/randint(..., generator=g) (called by the engine when a generator is given): values
    of `like`'s shape, dtype and device drawn from g ("rand": U[0, 1), "randn": N(0, 1),
    "randint": integers in [low, high))."""
    check(generator, kind)
    if generator.device.type != like.device.type:
        raise RuntimeError(f"Expected a '{like.device.type}' device type for generator but found '{generator.device.type}'")
    shape = tuple(like.shape)
    rng = generator._np
    if kind == "rand":
        v = rng.random(shape)
    elif kind == "randn":
        v = rng.standard_normal(shape)
    else:
        v = rng.integers(low, high, size=shape, dtype=np.int64)
    return _C.from_numpy(np.asarray(v)).to(dtype=like.dtype, device=like.device)
