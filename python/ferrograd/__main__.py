"""``python -m ferrograd``: train a small network on real data, or run the self-check.

    python -m ferrograd [train] [--epochs N] [--seed S] [--hidden H] [--lr LR] [--batch-size B] [--out PATH]
    python -m ferrograd selfcheck
    python -m ferrograd --version

``train`` (the default) fits an MLP to the UCI 8x8 handwritten digits that ship inside the package,
shows a progress bar with the running loss, prints the accuracy on a held-out test split and saves the
weights with ``ferrograd.save``. ``selfcheck`` builds a small graph, prints its ``grad_fn`` chain and
checks its gradients against finite differences (exit status 1 on a mismatch).
"""

import argparse
import sys

COMMANDS = ("train", "selfcheck")


def _version():
    from ._selfcheck import version

    return version()


def build_parser():
    from . import _train

    parser = argparse.ArgumentParser(
        prog="python -m ferrograd",
        description="Train a small MLP on the handwritten digits shipped with ferrograd (the default "
        "command), or run the autograd self-check.",
        epilog="Without a command, `train` runs. `python -m ferrograd train --help` lists the training "
        "options: --epochs, --seed, --hidden, --lr, --batch-size, --test-fraction, --out, --progress.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="{train,selfcheck}")
    train = sub.add_parser(
        "train", help="train an MLP on the packaged UCI 8x8 digits (default)",
        description="Train an MLP (64-H-10, ReLU, Adam, cross-entropy) on the UCI 8x8 handwritten digits "
        "that ship inside ferrograd: 1,797 images, split into train and test sets by --seed. Shows a "
        "progress bar with the running loss per epoch, prints the test accuracy, and saves the trained "
        "weights (the model's state_dict) with ferrograd.save in the safetensors format.",
        prog="python -m ferrograd train")
    _train.add_arguments(train)
    sub.add_parser("selfcheck", help="check autograd's gradients against finite differences",
                   description="Build a small graph, print its grad_fn chain, run backward() and compare "
                   "every leaf's gradient with central finite differences in float64.",
                   prog="python -m ferrograd selfcheck")
    return parser


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    # `train` is the default command: `python -m ferrograd --epochs 5` means `... train --epochs 5`.
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, "train")
    args = build_parser().parse_args(argv)
    if args.version:
        print(f"ferrograd {_version()}")
        return 0
    if args.command == "selfcheck":
        from ._selfcheck import self_check

        return self_check()
    from . import _train

    return _train.run(args)


if __name__ == "__main__":
    sys.exit(main())
