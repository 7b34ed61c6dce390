"""torch._dynamo.config: the knobs training scripts set. `recompile_limit` and `cache_size_limit`
are one setting under two names (torch renamed it), as are their `accumulated_` forms."""

import sys
import types

_ALIASES = {"cache_size_limit": "recompile_limit", "accumulated_cache_size_limit": "accumulated_recompile_limit"}

recompile_limit = 8             # entries per compiled function; past it: eager, with a warning
accumulated_recompile_limit = 256
suppress_errors = False         # an internal capture failure: run eagerly instead of raising
automatic_dynamic_shapes = True  # a size that changed makes that dim symbolic in the next capture
assume_static_by_default = True
error_on_recompile = False      # raise RecompileError instead of recompiling
capture_scalar_outputs = False  # accepted; .item() is still a graph break
capture_dynamic_output_shape_ops = False
verbose = False
optimize_ddp = True
inline_inbuilt_nn_modules = True
specialize_int = False
force_parameter_static_shapes = True
cache_size_limit = recompile_limit
accumulated_cache_size_limit = accumulated_recompile_limit


class _ConfigModule(types.ModuleType):
    def __getattribute__(self, name):
        name = _ALIASES.get(name, name)
        return super().__getattribute__(name)

    def __setattr__(self, name, value):
        name = _ALIASES.get(name, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _ConfigModule
