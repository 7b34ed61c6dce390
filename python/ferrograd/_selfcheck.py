"""``python -m ferrograd selfcheck``: a self-check you can read.

It builds a small expression graph with the PyTorch API, prints the chain of ``grad_fn`` nodes
that autograd recorded, runs ``backward()``, and checks every leaf's gradient against central
finite differences computed in float64. Exit status 0 when every gradient matches, 1 otherwise.
"""

import ferrograd as torch  # the whole point: this file is ordinary PyTorch code

SHAPES = {"x": (4, 3), "w": (3, 5), "b": (5,)}
FORMULA = "y = sum(tanh(x @ w + b) * (x @ w + b)) + sum(exp(0.5 * x))"
EPS = 1e-6  # finite-difference step (float64)
TOL = 1e-4  # allowed |autograd - finite difference|, relative to max(1, |gradient|)


def f(x, w, b):
    """The function under test: a matmul, a broadcast add (b over the rows), tanh, mul, exp, sums."""
    z = x @ w + b
    return (z.tanh() * z).sum() + (x * 0.5).exp().sum()


def version():
    v = getattr(torch, "__version__", None)
    if v is None:
        from importlib.metadata import version as dist_version

        v = dist_version("ferrograd")
    return str(v)


def print_graph(root, leaf_names):
    """Print the grad_fn graph below ``root`` as an indented tree (shared nodes are shown once)."""
    seen = {}  # id(node) -> node; keeping the node alive keeps its id unique

    def label(node):
        name = node.name()
        var = getattr(node, "variable", None)  # AccumulateGrad knows its leaf
        if var is not None:
            for leaf_name, leaf in leaf_names.items():
                if var is leaf:
                    return f"{name}  (leaf {leaf_name})"
        return name

    def walk(node, prefix, last, depth):
        branch = "" if depth == 0 else ("`-- " if last else "|-- ")
        if id(node) in seen:
            print(f"{prefix}{branch}{label(node)}  (shared, shown above)")
            return
        seen[id(node)] = node
        print(f"{prefix}{branch}{label(node)}")
        children = [fn for fn, _ in node.next_functions if fn is not None]
        child_prefix = prefix if depth == 0 else prefix + ("    " if last else "|   ")
        for i, child in enumerate(children):
            walk(child, child_prefix, i == len(children) - 1, depth + 1)

    walk(root, "", True, 0)


def f64_value(values):
    """f evaluated in float64 on plain Python lists, with gradient recording off."""
    with torch.no_grad():
        args = [torch.tensor(values[n], dtype=torch.float64) for n in ("x", "w", "b")]
        return f(*args).item()


def finite_difference(values, name):
    """Central differences of f with respect to every element of leaf ``name``."""
    import numpy as np

    base = np.array(values[name], dtype=np.float64)
    grad = np.zeros_like(base)
    for idx in np.ndindex(base.shape):
        probe = dict(values)
        plus, minus = base.copy(), base.copy()
        plus[idx] += EPS
        minus[idx] -= EPS
        probe[name] = plus.tolist()
        f_plus = f64_value(probe)
        probe[name] = minus.tolist()
        f_minus = f64_value(probe)
        grad[idx] = (f_plus - f_minus) / (2 * EPS)
    return grad


def self_check():
    import numpy as np

    print(f"ferrograd {version()} self-check\n")
    torch.manual_seed(0)
    leaves = {n: torch.randn(*s, requires_grad=True) for n, s in SHAPES.items()}
    x, w, b = leaves["x"], leaves["w"], leaves["b"]

    print(FORMULA)
    print("  " + ", ".join(f"{n}: {list(t.shape)} {t.dtype}" for n, t in leaves.items())
          + f"  (b is broadcast over the {SHAPES['x'][0]} rows)")
    y = f(x, w, b)
    print(f"  y = {y.item():.6f}\n")

    print("grad_fn graph recorded by autograd (from y back to the leaves):")
    print_graph(y.grad_fn, leaves)

    print("\nrunning y.backward() ...\n")
    y.backward()

    # Leaf values as float64 Python lists: the finite differences are computed from these.
    values = {n: t.detach().numpy().astype(np.float64).tolist() for n, t in leaves.items()}

    print(f"gradients vs central finite differences (float64, step {EPS:g}):")
    header = f"  {'leaf':<5} {'shape':<8} {'max |grad - fd|':>16} {'tolerance':>10}  result"
    print(header)
    print("  " + "-" * (len(header) - 2))
    ok = True
    for name, leaf in leaves.items():
        if leaf.grad is None:
            err, tol, passed = float("nan"), TOL, False
        else:
            auto = leaf.grad.numpy().astype(np.float64)
            fd = finite_difference(values, name)
            err = float(np.max(np.abs(auto - fd))) if fd.size else 0.0
            tol = TOL * max(1.0, float(np.max(np.abs(fd))) if fd.size else 1.0)
            passed = auto.shape == fd.shape and err <= tol
        ok &= passed
        shape = "x".join(map(str, SHAPES[name]))
        print(f"  {name:<5} {shape:<8} {err:>16.2e} {tol:>10.1e}  {'PASS' if passed else 'FAIL'}"
              + ("" if leaf.grad is not None else "  (.grad is None)"))

    print("\nself-check " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1
