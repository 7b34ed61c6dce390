"""Differential fuzzer beyond single ops (issue #34 item 4): generated programs over nn, optim, data,
hooks, custom Functions, checkpoint, fx, autograd.grad and in-place views, run in torch and in
ferrograd and compared. See README.md."""
