"""``python -m ferrograd train``: train a small MLP on the UCI 8x8 handwritten digits that ship with the
package (``ferrograd/data/digits.npz``: 1,797 images, pixels 0..16, labels 0..9).

The training loop is ordinary PyTorch code written against a module called ``torch``; ``run`` hands it
ferrograd, or torch itself with the hidden ``--lib torch`` flag, so the two can be compared on the same
script, the same train/test split and the same hyperparameters.
"""

import importlib
import math
import os
import sys
import time

import numpy as np

DEFAULTS = dict(epochs=30, seed=0, hidden=128, lr=1e-3, batch_size=32, test_fraction=0.2)


# ----------------------------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------------------------

def load_digits():
    """The packaged digits as NumPy arrays: images uint8 (1797, 8, 8) in 0..16, labels uint8 (1797,)."""
    from importlib.resources import files

    with files("ferrograd").joinpath("data", "digits.npz").open("rb") as fh:
        with np.load(fh) as z:
            return z["images"], z["labels"]


def split_indices(n, test_fraction, seed):
    """A seeded train/test split of range(n), the same whichever library trains."""
    perm = np.random.default_rng(seed).permutation(n)
    n_test = int(round(n * test_fraction))
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


# ----------------------------------------------------------------------------------------------
# progress bar
# ----------------------------------------------------------------------------------------------

class TextBar:
    """A minimal progress bar (used when tqdm is not installed): ``desc [#####.....] 12/45 loss 0.123``.

    On a terminal it redraws in place; otherwise (a log, a pipe) it writes one finished line per bar.
    """

    def __init__(self, total, desc, file=None, width=30):
        self.total, self.desc, self.width, self.n = total, desc, width, 0
        self.file = file if file is not None else sys.stderr
        self.live = hasattr(self.file, "isatty") and self.file.isatty()
        self.postfix = ""
        self.t0 = self._last = time.perf_counter()

    def set_postfix_str(self, s, refresh=True):
        self.postfix = s

    def update(self, n=1):
        self.n += n
        now = time.perf_counter()
        if self.live and (now - self._last > 0.1 or self.n >= self.total):
            self._last = now
            self.file.write("\r" + self._line())
            self.file.flush()

    def _line(self):
        filled = self.width * self.n // max(self.total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        return (f"{self.desc} [{bar}] {self.n}/{self.total} {time.perf_counter() - self.t0:4.1f}s"
                + (f" {self.postfix}" if self.postfix else ""))

    def close(self):
        self.file.write(("\r" if self.live else "") + self._line() + "\n")
        self.file.flush()


def progress_bar(total, desc, kind="auto"):
    """The bar for one epoch: tqdm for kind 'tqdm', and for 'auto' when tqdm is importable and stderr is a
    terminal (in a log, TextBar's one line per epoch reads better); else TextBar; None for 'none'."""
    if kind == "none":
        return None
    if kind == "tqdm" or (kind == "auto" and sys.stderr.isatty()):
        try:
            from tqdm import tqdm
        except ImportError:
            if kind == "tqdm":
                raise SystemExit("--progress tqdm: tqdm is not installed (pip install tqdm)")
        else:
            return tqdm(total=total, desc=desc, unit="batch", leave=True, file=sys.stderr,
                        bar_format="{desc} |{bar:30}| {n_fmt}/{total_fmt} {elapsed}{postfix}")
    return TextBar(total, desc)


# ----------------------------------------------------------------------------------------------
# the training script, written against the torch API
# ----------------------------------------------------------------------------------------------

def make_model(torch, hidden):
    nn = torch.nn
    return nn.Sequential(
        nn.Flatten(),             # (N, 8, 8) -> (N, 64)
        nn.Linear(64, hidden),
        nn.ReLU(),
        nn.Linear(hidden, 10),    # logits for the digits 0..9
    )


def evaluate(torch, model, x, y):
    """(accuracy, number correct) of ``model`` on images ``x`` with labels ``y``."""
    model.eval()
    with torch.no_grad():
        pred = model(x).argmax(dim=1)
    correct = int((pred == y).sum().item())
    return correct / len(y), correct


def train(torch, *, epochs, seed, hidden, lr, batch_size, test_fraction, out, progress="auto", log=print):
    """Train the MLP with library ``torch`` (ferrograd or torch); returns a dict of results."""
    DataLoader, TensorDataset = torch.utils.data.DataLoader, torch.utils.data.TensorDataset

    images, labels = load_digits()
    train_idx, test_idx = split_indices(len(labels), test_fraction, seed)
    x = images.astype(np.float32) / 16.0          # pixels 0..16 -> 0..1
    y = labels.astype(np.int64)
    x_train, y_train = torch.from_numpy(x[train_idx]), torch.from_numpy(y[train_idx])
    x_test, y_test = torch.from_numpy(x[test_idx]), torch.from_numpy(y[test_idx])

    torch.manual_seed(seed)  # weight init and the DataLoader's shuffling
    model = make_model(torch, hidden)
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=batch_size, shuffle=True)
    loss_fn = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    n_params = sum(p.numel() for p in model.parameters())

    log(f"{torch.__name__} {torch.__version__}: MLP 64-{hidden}-10 ({n_params:,} parameters) on the UCI 8x8 "
        f"digits, {len(train_idx)} train / {len(test_idx)} test images (split seed {seed})")
    t0 = time.perf_counter()
    width = len(str(epochs))
    for epoch in range(1, epochs + 1):
        model.train()
        bar = progress_bar(len(loader), f"epoch {epoch:>{width}}/{epochs}", progress)
        total, count = 0.0, 0
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(yb)
            count += len(yb)
            if bar is not None:
                bar.set_postfix_str(f"loss {total / count:.4f}", refresh=False)
                bar.update(1)
        if bar is not None:
            bar.close()
    train_time = time.perf_counter() - t0
    train_loss = total / max(count, 1)

    acc, correct = evaluate(torch, model, x_test, y_test)
    log(f"trained {epochs} epochs in {train_time:.1f}s, mean train loss in the last epoch {train_loss:.4f}")
    log(f"test accuracy: {100 * acc:.2f}% ({correct}/{len(test_idx)})")

    if out:
        out_dir = os.path.dirname(os.path.abspath(out))
        os.makedirs(out_dir, exist_ok=True)
        torch.save(model.state_dict(), out)
        log(f"saved weights to {out} ({len(model.state_dict())} tensors); reload with "
            f"model.load_state_dict({torch.__name__}.load({out!r}))")
    return dict(accuracy=acc, correct=correct, n_test=len(test_idx), train_loss=train_loss,
                train_time=train_time, model=model)


def add_arguments(parser):
    d = DEFAULTS
    parser.add_argument("--epochs", type=int, default=d["epochs"], metavar="N",
                        help=f"passes over the training images (default {d['epochs']})")
    parser.add_argument("--seed", type=int, default=d["seed"],
                        help="seed for the train/test split, weight initialisation and batch shuffling "
                             f"(default {d['seed']})")
    parser.add_argument("--hidden", type=int, default=d["hidden"], metavar="H",
                        help=f"width of the hidden layer: the model is 64-H-10 (default {d['hidden']})")
    parser.add_argument("--lr", type=float, default=d["lr"], help=f"Adam learning rate (default {d['lr']:g})")
    parser.add_argument("--batch-size", type=int, default=d["batch_size"], metavar="B",
                        help=f"images per optimizer step (default {d['batch_size']})")
    parser.add_argument("--test-fraction", type=float, default=d["test_fraction"], metavar="F",
                        help="share of the 1,797 images held out for the test accuracy "
                             f"(default {d['test_fraction']:g})")
    parser.add_argument("--out", default=None, metavar="PATH",
                        help="where to save the trained weights (the model's state_dict, in the safetensors "
                             "format, via ferrograd.save; default ./digits_mlp.safetensors); "
                             "--out '' skips saving")
    parser.add_argument("--progress", choices=("auto", "tqdm", "text", "none"), default="auto",
                        help="progress bar: auto (the default) uses tqdm when it is installed and stderr is a "
                             "terminal, else a built-in text bar; or force tqdm or text, or none")
    parser.add_argument("--lib", default="ferrograd", help=__import__("argparse").SUPPRESS)


def run(args):
    """Entry point of the `train` subcommand; returns the exit status."""
    for name in ("epochs", "hidden", "batch_size"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')} must be at least 1")
    if not (0 < args.test_fraction < 1) or not math.isfinite(args.lr) or args.lr <= 0:
        raise SystemExit("--test-fraction must be in (0, 1) and --lr positive")
    torch = importlib.import_module(args.lib)
    out = args.out
    if out is None:
        out = "digits_mlp.safetensors" if args.lib == "ferrograd" else f"digits_mlp.{args.lib}.pt"
    train(torch, epochs=args.epochs, seed=args.seed, hidden=args.hidden, lr=args.lr,
          batch_size=args.batch_size, test_fraction=args.test_fraction, out=out or None,
          progress=args.progress)
    return 0
