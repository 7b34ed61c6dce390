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
    ("accepted_where_torch_raises", "inplace", "*:b.expand:*"): (
        "an in-place op on an expanded view of a tensor that requires grad (elements sharing memory) is accepted; at backward "
        "torch raises 'unsupported operation: more than one element of the written-to tensor refers to a "
        "single memory location'",
        "a = torch.ones(3, 3, requires_grad=True)\nb = a * 1\nv = b.expand(2, 3, 3)\nv.zero_()\n(b * b).sum().backward()\nreturn a.grad\n"),
    ("accepted_where_torch_raises", "inplace", "*:addcmul_"): (
        "v.addcmul_(v, v) saves v for its own backward and then modifies it; torch's version check raises "
        "at backward, the library accepts",
        "x = torch.ones(2, 2, requires_grad=True)\ny = x * 2\nv = y.t()[1:]\nv.addcmul_(v, v)\n"
        "y.sum().backward()\nreturn x.grad\n"),
    ("accepted_where_torch_raises", "function", "Function:once_differentiable:double_backward"): (
        "a gradient computed through a @once_differentiable backward with create_graph=True must not "
        "require grad (torch raises on its backward); the library lets it be differentiated",
        "from torch.autograd.function import once_differentiable\n"
        "class F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        ctx.save_for_backward(x)\n        return x * x\n"
        "    @staticmethod\n    @once_differentiable\n    def backward(ctx, g):\n        x, = ctx.saved_tensors\n        return g * 2 * x\n"
        "x = torch.ones(2, requires_grad=True)\ng, = torch.autograd.grad(F.apply(x).sum(), x, create_graph=True)\n"
        "g.sum().backward()\nreturn x.grad\n"),
    ("accepted_where_torch_raises", "hooks", "register_hook:(g[0],) * 2"): (
        "a node hook whose grad_inputs have the wrong size, or give a gradient to an input that needs none, is "
        "accepted; torch raises ('hook has changed the size of value')",
        "x = torch.ones(2, 3, requires_grad=True)\ny = x * 2\ny.grad_fn.register_hook(lambda gi, go: (gi[0],) * 2)\n"
        "y.sin().sum().backward()\nreturn x.grad\n"),
}


def lookup(table, sig):
    """The entry of table whose (category, kind, op pattern) matches sig, or None."""
    cat, kind, op = sig
    for (c, k, pat), v in table.items():
        if c == cat and k == kind and re.fullmatch(".*".join(map(re.escape, pat.split("*"))), op):
            return (c, k, pat), v
    return None
