"""Training from a stream, the way data-pipeline code does it: an IterableDataset that reads its records in
worker-sized shards (get_worker_info), chained with a second source (ChainDataset), batched by a
DataLoader with two workers and a worker_init_fn; the same records through a DataPipe graph
(IterableWrapper -> map -> filter -> sharding_filter -> batch -> collate); and a linear model trained on
the streamed batches with SGD."""
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import ChainDataset, DataLoader, IterableDataset, get_worker_info
from torch.utils.data.datapipes.iter import IterableWrapper

rng = np.random.default_rng(5)
RECORDS = [(rng.normal(size=4).astype(np.float32), float(i % 3)) for i in range(45)]


class RecordStream(IterableDataset):
    """Yields (features, target) records from [start, stop), split between the workers."""

    def __init__(self, start, stop):
        self.start, self.stop = start, stop

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            lo, step = self.start, 1
        else:
            lo, step = self.start + info.id, info.num_workers
        for i in range(lo, self.stop, step):
            features, target = RECORDS[i]
            yield torch.from_numpy(features), torch.tensor(target)


seen_workers = []


def init_worker(worker_id):
    info = get_worker_info()
    seen_workers.append((worker_id, info.num_workers))


stream = ChainDataset([RecordStream(0, 30), RecordStream(30, 45)])
loader = DataLoader(stream, batch_size=4, num_workers=2, worker_init_fn=init_worker)
order = [int(round(t.sum().item())) for _, t in loader]
print("RESULT stream_batches", len(order), *order)

torch.manual_seed(0)
model = nn.Linear(4, 1)
with torch.no_grad():
    model.weight.copy_(torch.tensor([[0.1, -0.2, 0.3, 0.0]]))
    model.bias.fill_(0.05)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(3):
    total, count = 0.0, 0
    for x, t in loader:
        loss = nn.functional.mse_loss(model(x).squeeze(-1), t)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * len(t)
        count += len(t)
    print(f"RESULT stream_epoch{epoch} {total / count:.7g} {count}")
print("RESULT stream_weights", *[f"{v:.6g}" for v in model.weight.detach().flatten().tolist()])


def scale(record):
    features, target = record
    return features * 2.0, target


def keep(record):
    return record[1] != 2.0


pipe = IterableWrapper(RECORDS).map(scale).filter(keep).sharding_filter().batch(5).collate()
sizes = [len(b[1]) for b in pipe]
print("RESULT pipe_main", len(sizes), *sizes)
pipe_loader = DataLoader(pipe, batch_size=None, num_workers=2)
sums = [f"{b[0].sum().item():.5g}" for b in pipe_loader]
print("RESULT pipe_workers", len(sums), *sums)
