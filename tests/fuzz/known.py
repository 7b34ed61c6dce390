"""What the differential fuzzer is allowed to find today.

ALLOWLIST: differences that are not bugs of the library (torch quirks, documented non-goals), each with
its reason. KNOWN_BUGS: real bugs or gaps found by the fuzzer and not fixed yet, each with a minimal
reproducer (the body of a `prog(torch)`, run by tests/test_differential_fuzz.py as a non-strict xfail,
so a fix shows up as XPASS and the entry can be deleted).

Both are keyed by a signature (category, kind, op pattern): the op pattern is a glob pattern over
the program's op (programs.py names it) in which only `*` is special, always naming the feature concerned; no entry matches a whole
category or kind.
"""
import re

ALLOWLIST = {
    # (category, kind, op pattern): reason
}

KNOWN_BUGS = {
    ("refused_where_torch_works", "optim", "*:LinearLR*"): (
        "torch.optim.lr_scheduler.LinearLR is missing",
        "m = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "s = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=3)\n"
        "lrs = []\nfor _ in range(4):\n    opt.step()\n    s.step()\n    lrs.append(opt.param_groups[0]['lr'])\nreturn lrs\n"),
    ("refused_where_torch_works", "optim", "*:ReduceLROnPlateau*"): (
        "torch.optim.lr_scheduler.ReduceLROnPlateau is missing",
        "m = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "s = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, factor=0.5)\n"
        "lrs = []\nfor loss in (1.0, 2.0, 3.0, 0.5):\n    opt.step()\n    s.step(loss)\n    lrs.append(opt.param_groups[0]['lr'])\nreturn lrs\n"),
    ("refused_where_torch_works", "optim", "*:CosineAnnealingWarmRestarts*"): (
        "torch.optim.lr_scheduler.CosineAnnealingWarmRestarts is missing",
        "m = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "s = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2)\n"
        "lrs = []\nfor _ in range(5):\n    opt.step()\n    s.step()\n    lrs.append(opt.param_groups[0]['lr'])\nreturn lrs\n"),
    ("refused_where_torch_works", "data", "DataLoader:weighted"): (
        "torch.utils.data.WeightedRandomSampler is missing",
        "s = torch.utils.data.WeightedRandomSampler([0.0, 1.0, 0.0], 4, replacement=True)\nreturn list(s)\n"),
    ("exception_kind_mismatch", "data", "DataLoader:weighted"): (
        "torch.utils.data.WeightedRandomSampler is missing (AttributeError where torch raises its own error "
        "for all-zero weights)",
        "s = torch.utils.data.WeightedRandomSampler([0.0, 0.0], 2)\nreturn list(s)\n"),
    ("accepted_where_torch_raises", "inplace", "*:b.expand:*"): (
        "an in-place op on an expanded view of a tensor that requires grad (elements sharing memory) is accepted; at backward "
        "torch raises 'unsupported operation: more than one element of the written-to tensor refers to a "
        "single memory location'",
        "a = torch.ones(3, 3, requires_grad=True)\nb = a * 1\nv = b.expand(2, 3, 3)\nv.zero_()\n(b * b).sum().backward()\nreturn a.grad\n"),
    ("refused_where_torch_works", "inplace", "*:b.as_strided:*"): (
        "Tensor.as_strided is missing",
        "b = torch.zeros(3, 3)\nv = b.as_strided((2, 2), (1, 3))\nv.fill_(1.0)\nreturn b\n"),
    ("exception_kind_mismatch", "inplace", "*:b.as_strided:*"): (
        "Tensor.as_strided is missing (AttributeError where torch raises its own error later)",
        "b = torch.zeros(3, 3, requires_grad=True)\nreturn b.as_strided((2, 2), (1, 3)).shape\n"),
    ("wrong_value", "inplace", "*:b.diagonal:*"): (
        "Tensor.diagonal() returns a copy, not a view: an in-place op on it does not write through to the base",
        "b = torch.zeros(3, 3)\nv = b.diagonal()\nv.fill_(1.0)\nreturn [b, b._version, v._version]\n"),
    ("accepted_where_torch_raises", "inplace", "*:b.diagonal:*"): (
        "an in-place op on the diagonal of a leaf that requires grad, or of a tensor saved for backward, is "
        "not refused (diagonal is no view)",
        "b = torch.zeros(3, 3, requires_grad=True)\nb.diagonal().exp_()\nreturn b\n"),
    ("accepted_where_torch_raises", "inplace", "*:addcmul_"): (
        "v.addcmul_(v, v) saves v for its own backward and then modifies it; torch's version check raises "
        "at backward, the library accepts",
        "x = torch.ones(2, 2, requires_grad=True)\ny = x * 2\nv = y.t()[1:]\nv.addcmul_(v, v)\n"
        "y.sum().backward()\nreturn x.grad\n"),
    ("refused_where_torch_works", "function", "Function:too_many_grads"): (
        "a custom Function's backward may return extra trailing None gradients in torch; refused here",
        "class F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x, k):\n        return x * k\n"
        "    @staticmethod\n    def backward(ctx, g):\n        return g * 2, None, None\n"
        "x = torch.ones(2, requires_grad=True)\nF.apply(x, 2.0).sum().backward()\nreturn x.grad\n"),
    ("accepted_where_torch_raises", "function", "Function:once_differentiable:double_backward"): (
        "a gradient computed through a @once_differentiable backward with create_graph=True must not "
        "require grad (torch raises on its backward); the library lets it be differentiated",
        "from torch.autograd.function import once_differentiable\n"
        "class F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        ctx.save_for_backward(x)\n        return x * x\n"
        "    @staticmethod\n    @once_differentiable\n    def backward(ctx, g):\n        x, = ctx.saved_tensors\n        return g * 2 * x\n"
        "x = torch.ones(2, requires_grad=True)\ng, = torch.autograd.grad(F.apply(x).sum(), x, create_graph=True)\n"
        "g.sum().backward()\nreturn x.grad\n"),
    ("exception_kind_mismatch", "hooks", "register_*hook:g[0]"): (
        "a node (pre)hook that returns a Tensor instead of a tuple: torch raises TypeError ('expected tuple'), "
        "the library a RuntimeError",
        "x = torch.ones(2, 3, requires_grad=True)\ny = x * 2\ny.grad_fn.register_prehook(lambda g: g[0])\n"
        "y.sin().sum().backward()\nreturn x.grad\n"),
    ("accepted_where_torch_raises", "hooks", "register_hook:(g[0],) * 2"): (
        "a node hook whose grad_inputs have the wrong size, or give a gradient to an input that needs none, is "
        "accepted; torch raises ('hook has changed the size of value')",
        "x = torch.ones(2, 3, requires_grad=True)\ny = x * 2\ny.grad_fn.register_hook(lambda gi, go: (gi[0],) * 2)\n"
        "y.sin().sum().backward()\nreturn x.grad\n"),
    ("accepted_where_torch_raises", "hooks", "tensor_hook:*:g.double()"): (
        "a tensor hook that changes the gradient's dtype is accepted; torch raises 'hook has changed the type'",
        "x = torch.ones(2, 3, requires_grad=True)\ny = x * 2\ny.register_hook(lambda g: g.double())\n"
        "y.sin().sum().backward()\nreturn x.grad\n"),
    ("accepted_where_torch_raises", "hooks", "tensor_hook:*:g.float()"): (
        "a tensor hook that changes the gradient's dtype is accepted; torch raises 'hook has changed the type'",
        "x = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)\ny = x * 2\ny.register_hook(lambda g: g.float())\n"
        "y.sin().sum().backward()\nreturn x.grad\n"),
    ("accepted_where_torch_raises", "module", "GroupNorm:train"): (
        "GroupNorm in training with one value per group: torch raises ValueError ('Expected more than 1 "
        "value per channel when training'), the library returns zeros",
        "m = torch.nn.GroupNorm(1, 1)\nreturn m(torch.ones(1, 1))\n"),
    ("exception_kind_mismatch", "module", "ConvTranspose*"): (
        "ConvTranspose whose computed output size is negative: torch raises RuntimeError ('Output size is "
        "too small'), the library ValueError",
        "m = torch.nn.ConvTranspose1d(1, 1, 1, padding=1)\nreturn m(torch.ones(1, 1, 1))\n"),
    ("exception_kind_mismatch", "data", "DataLoader:random_repl"): (
        "RandomSampler(replacement=True) over an empty dataset: torch raises RuntimeError when iterated, "
        "the library ValueError",
        "s = torch.utils.data.RandomSampler(torch.utils.data.TensorDataset(torch.zeros(0, 3)), replacement=True, "
        "num_samples=2)\nreturn list(s)\n"),
}


def lookup(table, sig):
    """The entry of table whose (category, kind, op pattern) matches sig, or None."""
    cat, kind, op = sig
    for (c, k, pat), v in table.items():
        if c == cat and k == kind and re.fullmatch(".*".join(map(re.escape, pat.split("*"))), op):
            return (c, k, pat), v
    return None
