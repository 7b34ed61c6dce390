"""torch.utils.data.graph_settings: settings applied to every DataPipe of a graph (what the DataLoader does
for each worker): apply_sharding, apply_shuffle_settings, apply_random_seed. The graph is found through
the pipes' attributes (each pipe's sources)."""
from .dataloader import _apply_sharding, _pipes, _set_shuffle

__all__ = ["apply_random_seed", "apply_sharding", "apply_shuffle_settings", "get_all_graph_pipes"]


def get_all_graph_pipes(datapipe):
    """Every DataPipe reachable from `datapipe`, each once."""
    return list(_pipes(datapipe))


def apply_sharding(datapipe, num_of_instances, instance_id, sharding_group=None):
    """Shard every sharding_filter of the graph: instance `instance_id` of `num_of_instances` keeps its items."""
    _apply_sharding(datapipe, num_of_instances, instance_id)
    return datapipe


def apply_shuffle_settings(datapipe, shuffle=None):
    """Turn every shuffler of the graph on or off (None: leave them as they are)."""
    if shuffle is not None:
        _set_shuffle(datapipe, bool(shuffle))
    return datapipe


def apply_random_seed(datapipe, rng):
    """Seed every shuffler of the graph from the `rng` generator (ferrograd's or torch-style Generator)."""
    from .. import _generator

    for pipe in _pipes(datapipe):
        if callable(getattr(pipe, "set_shuffle", None)) and callable(getattr(pipe, "set_seed", None)):
            pipe.set_seed(int(_generator._numpy_rng(rng).integers(0, 2 ** 62)))
    return datapipe
