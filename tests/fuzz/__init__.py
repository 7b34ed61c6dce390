"""Differential fuzzer beyond single ops: generated programs over nn, optim, data,
hooks, custom Functions, checkpoint, fx, autograd.grad and in-place views, run in torch and in
ferrograd and compared. See README.md."""
