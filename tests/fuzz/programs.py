"""Program generator of the differential fuzzer: generate(seed, i) -> Program.

Each program is the source of a function `prog(torch)` written against the torch API, with `np`
(numpy) in scope. Its data come from its own numpy generator (seeded in the source), and modules'
initial weights are overwritten from it, so that torch and the library start from identical numbers
and a program printed alone is a complete reproducer. It returns a tree of tensors, numbers and
strings; the harness compares the trees (or the exception kinds).

A program has a kind (the family: module, optim, data, hooks, function, checkpoint, fx, grad,
inplace) and an op (the variant inside the family, e.g. "Conv2d:reflect" or "Function:too_many_grads");
(category, kind, op) is the signature by which failures are grouped and allow-listed.
"""
import random
from dataclasses import dataclass

HEADER = '''def prog(torch):
    rng = np.random.default_rng({seed})

    def T(*shape, dtype=torch.float64, rg=False, scale=1.0):
        return torch.tensor(rng.standard_normal(shape) * scale, dtype=dtype, requires_grad=rg)

    def load(m, scale=0.5):
        with torch.no_grad():
            for p in m.parameters():
                p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)) * scale, dtype=p.dtype))
        return m

    def grads(m):
        return [p.grad for p in m.parameters()]

'''


@dataclass
class Program:
    kind: str
    op: str
    body: str
    seed: int
    tol: float = 1.0

    @property
    def src(self):
        body = "\n".join(("    " + ln) if ln.strip() else "" for ln in self.body.strip("\n").splitlines())
        return HEADER.format(seed=self.seed) + body + "\n"

    def reproducer(self):
        return ("import numpy as np\nimport ferrograd as torch   # or: import torch\n\n" + self.src
                + "\nprint(prog(torch))\n")


def _dt(r):
    return r.choice(["torch.float32", "torch.float64"])


def _backward(out_expr="out"):
    return (f"w = T(*{out_expr}.shape, dtype={out_expr}.dtype)\n"
            f"({out_expr} * w).sum().backward()\n")


# ------------------------------------------------------------------ nn modules
def _conv(r, nd):
    groups = r.choice([1, 1, 2, 3])
    cin, cout = groups * r.randint(1, 3), groups * r.randint(1, 3)
    k = r.randint(1, 4)
    stride = r.randint(1, 3)
    dil = r.choice([1, 1, 2])
    mode = r.choice(["zeros", "zeros", "reflect", "replicate", "circular"])
    pad = r.choice([0, 1, 2, "'same'", "'valid'"]) if stride == 1 else r.choice([0, 1, 2])
    if isinstance(pad, int) and mode != "zeros":
        pad = min(pad, 1)
    bias = r.choice([True, False])
    size = [r.randint(1, 9) for _ in range(nd)]
    cls = f"Conv{nd}d"
    transpose = r.random() < 0.3 and mode == "zeros" and isinstance(pad, int)
    if transpose:
        cls = f"ConvTranspose{nd}d"
        op = r.randint(0, max(stride, dil) - 1) if r.random() < 0.5 else 0
        ctor = (f"torch.nn.{cls}({cin}, {cout}, {k}, stride={stride}, padding={pad}, output_padding={op}, "
                f"groups={groups}, bias={bias}, dilation={dil})")
    else:
        ctor = (f"torch.nn.{cls}({cin}, {cout}, {k}, stride={stride}, padding={pad}, dilation={dil}, "
                f"groups={groups}, bias={bias}, padding_mode='{mode}')")
    batched = r.random() < 0.85
    shape = ([r.randint(1, 3)] if batched else []) + [cin] + size
    return f"{cls}:{mode}" + (":unbatched" if not batched else ""), ctor, [shape]


def _pool(r, nd):
    kind = r.choice(["Max", "Avg", "AdaptiveAvg", "AdaptiveMax"])
    size = [r.randint(1, 8) for _ in range(nd)]
    shape = [r.randint(1, 2), r.randint(1, 3)] + size
    if r.random() < 0.15:
        shape = shape[1:]
    if kind.startswith("Adaptive"):
        outs = [r.choice([1, 2, 3, "None"]) if nd > 1 else r.randint(1, 4) for _ in range(nd)]
        arg = outs[0] if nd == 1 else "(" + ", ".join(map(str, outs)) + ")"
        return f"{kind}Pool{nd}d", f"torch.nn.{kind}Pool{nd}d({arg})", [shape]
    k = r.randint(1, 4)
    stride = r.choice(["None", 1, 2, 3])
    pad = r.randint(0, max(0, k // 2 + (1 if r.random() < 0.1 else 0)))
    ceil = r.choice([True, False])
    if kind == "Max":
        dil = r.choice([1, 1, 2])
        ctor = f"torch.nn.MaxPool{nd}d({k}, stride={stride}, padding={pad}, dilation={dil}, ceil_mode={ceil})"
    else:
        cip = r.choice([True, False])
        extra = f", divisor_override={r.choice(['None', 2, 3])}" if nd == 2 else ""
        ctor = (f"torch.nn.AvgPool{nd}d({k}, stride={stride}, padding={pad}, ceil_mode={ceil}, "
                f"count_include_pad={cip}{extra})")
    return f"{kind}Pool{nd}d" + (":ceil" if ceil else ""), ctor, [shape]


def _norm(r):
    which = r.choice(["BatchNorm1d", "BatchNorm2d", "LayerNorm", "GroupNorm", "InstanceNorm1d",
                      "InstanceNorm2d", "RMSNorm", "LocalResponseNorm"])
    c = r.randint(1, 4)
    n = r.randint(1, 3)
    if which.startswith("BatchNorm"):
        mom = r.choice([0.1, 0.5, "None"])
        ctor = (f"torch.nn.{which}({c}, eps={r.choice([1e-5, 1e-3])}, momentum={mom}, "
                f"affine={r.choice([True, False])}, track_running_stats={r.choice([True, True, False])})")
        shape = [n, c] + ([r.randint(1, 4)] * (1 if which == "BatchNorm2d" else r.randint(0, 1)))
        if which == "BatchNorm2d":
            shape.append(r.randint(1, 4))
    elif which.startswith("InstanceNorm"):
        ctor = (f"torch.nn.{which}({c}, affine={r.choice([True, False])}, "
                f"track_running_stats={r.choice([False, False, True])})")
        shape = [n, c, r.randint(2, 5)] + ([r.randint(1, 4)] if which == "InstanceNorm2d" else [])
    elif which == "GroupNorm":
        g = r.choice([1, 2])
        c = g * r.randint(1, 3)
        ctor = f"torch.nn.GroupNorm({g}, {c}, affine={r.choice([True, False])})"
        shape = [n, c] + [r.randint(1, 4)] * r.randint(0, 2)
    elif which == "LocalResponseNorm":
        ctor = f"torch.nn.LocalResponseNorm({r.randint(1, 4)}, alpha={r.choice([1e-4, 0.1])}, beta={r.choice([0.75, 0.5])}, k={r.choice([1.0, 2.0])})"
        shape = [n, c, r.randint(1, 4)] + [r.randint(1, 3)] * r.randint(0, 1)
    else:
        last = [r.randint(1, 4) for _ in range(r.randint(1, 2))]
        shape = [n] + last
        ns = last if r.random() < 0.5 else last[-1:]
        if which == "LayerNorm":
            ctor = (f"torch.nn.LayerNorm({ns}, eps={r.choice([1e-5, 1e-2])}, "
                    f"elementwise_affine={r.choice([True, False])}, bias={r.choice([True, False])})")
        else:
            ctor = f"torch.nn.RMSNorm({ns}, eps={r.choice(['None', 1e-3])}, elementwise_affine={r.choice([True, False])})"
    return which, ctor, [shape]


def _rnn(r):
    which = r.choice(["RNN", "LSTM", "GRU"])
    inp, hid, layers = r.randint(1, 4), r.randint(1, 4), r.randint(1, 2)
    bf, bi, bias = r.choice([True, False]), r.choice([True, False]), r.choice([True, True, False])
    extra = f", nonlinearity='{r.choice(['tanh', 'relu'])}'" if which == "RNN" else ""
    ctor = f"torch.nn.{which}({inp}, {hid}, num_layers={layers}, bias={bias}, batch_first={bf}, bidirectional={bi}{extra})"
    seq, batch = r.randint(1, 4), r.randint(1, 3)
    unbatched = r.random() < 0.15
    shape = [seq, inp] if unbatched else ([batch, seq, inp] if bf else [seq, batch, inp])
    hshape = [layers * (2 if bi else 1)] + ([] if unbatched else [batch]) + [hid]
    return which + (":bidir" if bi else "") + (":unbatched" if unbatched else ""), ctor, [shape], hshape


def _activation(r):
    a = r.choice(["torch.nn.ReLU()", "torch.nn.GELU(approximate='tanh')", "torch.nn.GELU()",
                  f"torch.nn.ELU(alpha={r.choice([0.5, 1.0, 2.0])})", f"torch.nn.LeakyReLU({r.choice([0.01, 0.2, -0.5])})",
                  f"torch.nn.Softplus(beta={r.choice([0.5, 1.0, 3.0])}, threshold={r.choice([1.0, 20.0])})",
                  f"torch.nn.Hardtanh({r.choice([-1.0, -0.5])}, {r.choice([0.5, 1.0])})", "torch.nn.SiLU()",
                  "torch.nn.Mish()", f"torch.nn.Softmax(dim={r.choice([0, -1, 1])})",
                  f"torch.nn.LogSoftmax(dim={r.choice([0, -1])})", "torch.nn.Sigmoid()", "torch.nn.Tanh()",
                  f"torch.nn.CELU({r.choice([0.5, 1.5])})", "torch.nn.SELU()", "torch.nn.Hardswish()",
                  "torch.nn.Hardsigmoid()", f"torch.nn.Softshrink({r.choice([0.5, 1.0])})",
                  f"torch.nn.Hardshrink({r.choice([0.5, 1.0])})", f"torch.nn.Threshold({r.choice([0.1, 0.5])}, {r.choice([0.0, -2.0])})",
                  "torch.nn.LogSigmoid()", "torch.nn.Softsign()", "torch.nn.Tanhshrink()", "torch.nn.ReLU6()",
                  f"torch.nn.GLU(dim={r.choice([-1, 0])})", f"torch.nn.PReLU({r.choice([1, 3])})",
                  f"torch.nn.Softmin(dim={r.choice([-1, 1])})"])
    shape = [r.randint(1, 3), 3] + [r.choice([2, 4])] * r.randint(0, 2)
    return a.split("(")[0].split(".")[-1], a, [shape]


def gen_module(r, seed):
    fam = r.choice(["linear", "conv1", "conv2", "pool1", "pool2", "norm", "norm", "rnn", "rnn", "embedding",
                    "dropout", "act", "act", "loss", "loss", "loss"])
    dt = _dt(r)
    tol = 1.0
    if fam == "loss":
        return _gen_loss(r, seed, dt)
    if fam == "embedding":
        n, d = r.randint(2, 6), r.randint(1, 4)
        pidx = r.choice(["None", 0, -1, n - 1])
        sgf = r.choice([False, False, True])
        mx = r.choice(["None", "None", 1.0])
        hi = n + (1 if r.random() < 0.1 else 0)
        body = (f"m = load(torch.nn.Embedding({n}, {d}, padding_idx={pidx}, max_norm={mx}, scale_grad_by_freq={sgf})).to({dt})\n"
                f"idx = torch.tensor(rng.integers(0, {hi}, size={[r.randint(1, 3), r.randint(1, 4)]}))\n"
                "out = m(idx)\n" + _backward() +
                "return {'out': out, 'grads': grads(m), 'weight': m.weight, 'names': [n for n, _ in m.named_parameters()]}\n")
        return Program("module", "Embedding" + (":max_norm" if mx != "None" else "") + (":sgf" if sgf else ""), body, seed)
    if fam == "linear":
        i, o = r.randint(1, 5), r.randint(1, 5)
        wrong = r.random() < 0.1
        shape = [r.randint(1, 3)] * r.randint(0, 2) + [i + (1 if wrong else 0)]
        op, ctor, shapes = "Linear", f"torch.nn.Linear({i}, {o}, bias={r.choice([True, False])})", [shape]
    elif fam in ("conv1", "conv2"):
        op, ctor, shapes = _conv(r, 1 if fam == "conv1" else 2)
    elif fam in ("pool1", "pool2"):
        op, ctor, shapes = _pool(r, 1 if fam == "pool1" else 2)
    elif fam == "norm":
        op, ctor, shapes = _norm(r)
    elif fam == "act":
        op, ctor, shapes = _activation(r)
    elif fam == "dropout":
        p = r.choice([0.0, 0.3, 0.9, 1.0])
        op, ctor, shapes = "Dropout:eval", f"torch.nn.Dropout({p})", [[r.randint(1, 3), r.randint(1, 4)]]
    if fam == "rnn":
        op, ctor, shapes, hshape = _rnn(r)
        give_h = r.random() < 0.5
        tol = 10.0
        hexpr = ""
        if give_h:
            if op.startswith("LSTM"):
                hexpr = f", (T(*{hshape}, dtype={dt}), T(*{hshape}, dtype={dt}))"
            else:
                hexpr = f", T(*{hshape}, dtype={dt}, rg=True)"
        body = (f"m = load(torch.nn.{ctor.split('torch.nn.', 1)[1]}).to({dt})\n"
                f"x = T(*{shapes[0]}, dtype={dt}, rg=True)\n"
                f"out, h = m(x{hexpr})\n"
                + _backward() +
                "return {'out': out, 'h': h, 'gx': x.grad, 'grads': grads(m), 'names': [n for n, _ in m.named_parameters()]}\n")
        return Program("module", op + (":h0" if give_h else ""), body, seed, tol)
    train = r.random() < 0.5 and fam == "norm"
    twice = train and r.random() < 0.5
    body = (f"m = load({ctor}).to({dt})\n"
            + ("m.train()\n" if train else "m.eval()\n") +
            f"x = T(*{shapes[0]}, dtype={dt}, rg=True)\n"
            + ("m(x.detach() * 2 + 1)\n" if twice else "") +
            "out = m(x)\n"
            "if isinstance(out, tuple):\n    out = out[0]\n"
            + _backward() +
            "bufs = {n: b for n, b in m.named_buffers()}\n"
            "return {'out': out, 'gx': x.grad, 'grads': grads(m), 'bufs': bufs, 'names': [n for n, _ in m.named_parameters()]}\n")
    if fam == "norm":
        tol = 5.0  # normalizing over one or two values amplifies float32 rounding by up to 1/sqrt(eps)
    return Program("module", op + (":train" if train else ""), body, seed, tol)


def _gen_loss(r, seed, dt):
    red = r.choice(["'mean'", "'sum'", "'none'"])
    n, c = r.randint(1, 4), r.randint(2, 4)
    which = r.choice(["MSE", "L1", "SmoothL1", "Huber", "CE", "CE", "CEprob", "NLL", "BCE", "BCEWL", "KLDiv",
                      "SoftMargin", "CosEmb", "MarginRanking", "Hinge", "PoissonNLL", "GaussianNLL", "MultiMargin"])
    x = f"x = T({n}, {c}, dtype={dt}, rg=True)\n"
    if which in ("MSE", "L1"):
        crit, tgt = f"torch.nn.{which}Loss(reduction={red})", f"T({n}, {c}, dtype={dt})"
    elif which == "SmoothL1":
        crit, tgt = f"torch.nn.SmoothL1Loss(reduction={red}, beta={r.choice([0.0, 0.5, 1.0, 2.0])})", f"T({n}, {c}, dtype={dt})"
    elif which == "Huber":
        crit, tgt = f"torch.nn.HuberLoss(reduction={red}, delta={r.choice([0.5, 1.0, 2.0])})", f"T({n}, {c}, dtype={dt})"
    elif which in ("CE", "NLL"):
        ii = r.choice(["-100", "0", "1"])
        wt = f"torch.tensor(rng.random({c}), dtype={dt})" if r.random() < 0.4 else "None"
        ls = f", label_smoothing={r.choice([0.0, 0.1, 0.5])}" if which == "CE" else ""
        crit = f"torch.nn.{'CrossEntropy' if which == 'CE' else 'NLL'}Loss(weight={wt}, ignore_index={ii}, reduction={red}{ls})"
        hi = c + (1 if r.random() < 0.05 else 0)
        tgt = f"torch.tensor(rng.integers(0, {hi}, size={n}))"
        if r.random() < 0.2:
            x = f"x = T({n}, {c}, 3, dtype={dt}, rg=True)\n"
            tgt = f"torch.tensor(rng.integers(0, {hi}, size=({n}, 3)))"
        if which == "NLL":
            x += "x = x.log_softmax(1)\n"
    elif which == "CEprob":
        crit = f"torch.nn.CrossEntropyLoss(reduction={red}, label_smoothing={r.choice([0.0, 0.2])})"
        tgt = f"T({n}, {c}, dtype={dt}).softmax(1)"
        which = "CE:probs"
    elif which == "BCE":
        crit = f"torch.nn.BCELoss(reduction={red})"
        x = f"x0 = T({n}, {c}, dtype={dt}, rg=True)\nx = x0.sigmoid()\n"
        tgt = f"torch.tensor(rng.random(({n}, {c})), dtype={dt})"
    elif which == "BCEWL":
        pw = f"torch.tensor(rng.random({c}) * 3, dtype={dt})" if r.random() < 0.5 else "None"
        crit, tgt = f"torch.nn.BCEWithLogitsLoss(reduction={red}, pos_weight={pw})", f"torch.tensor(rng.random(({n}, {c})), dtype={dt})"
    elif which == "KLDiv":
        lt = r.choice([True, False])
        red = r.choice(["'batchmean'", red])
        crit = f"torch.nn.KLDivLoss(reduction={red}, log_target={lt})"
        x += "x = x.log_softmax(1)\n"
        tgt = f"T({n}, {c}, dtype={dt}).log_softmax(1)" + ("" if lt else ".exp()")
    elif which == "SoftMargin":
        crit, tgt = f"torch.nn.SoftMarginLoss(reduction={red})", f"torch.tensor(rng.choice([-1.0, 1.0], size=({n}, {c})), dtype={dt})"
    elif which == "CosEmb":
        crit = f"torch.nn.CosineEmbeddingLoss(margin={r.choice([0.0, 0.5])}, reduction={red})"
        return Program("module", "loss:CosEmb", x + f"x2 = T({n}, {c}, dtype={dt}, rg=True)\ny = torch.tensor(rng.choice([-1, 1], size={n}))\n"
                       f"out = {crit}(x, x2, y)\nout.sum().backward()\nreturn {{'out': out, 'gx': x.grad, 'gx2': x2.grad}}\n", seed)
    elif which == "MarginRanking":
        crit = f"torch.nn.MarginRankingLoss(margin={r.choice([0.0, 0.5])}, reduction={red})"
        return Program("module", "loss:MarginRanking", f"x = T({n}, dtype={dt}, rg=True)\nx2 = T({n}, dtype={dt}, rg=True)\n"
                       f"y = torch.tensor(rng.choice([-1.0, 1.0], size={n}), dtype={dt})\n"
                       f"out = {crit}(x, x2, y)\nout.sum().backward()\nreturn {{'out': out, 'gx': x.grad, 'gx2': x2.grad}}\n", seed)
    elif which == "Hinge":
        crit, tgt = f"torch.nn.HingeEmbeddingLoss(margin={r.choice([1.0, 0.5])}, reduction={red})", f"torch.tensor(rng.choice([-1.0, 1.0], size=({n}, {c})), dtype={dt})"
    elif which == "PoissonNLL":
        crit = f"torch.nn.PoissonNLLLoss(log_input={r.choice([True, False])}, full={r.choice([True, False])}, reduction={red})"
        x = f"x0 = T({n}, {c}, dtype={dt}, rg=True)\nx = x0.exp()\n"
        tgt = f"torch.tensor(rng.integers(0, 5, size=({n}, {c})), dtype={dt})"
    elif which == "GaussianNLL":
        crit = f"torch.nn.GaussianNLLLoss(full={r.choice([True, False])}, eps={r.choice([1e-6, 0.1])}, reduction={red})"
        return Program("module", "loss:GaussianNLL", x + f"var = torch.tensor(rng.random(({n}, {c})), dtype={dt}).requires_grad_()\ny = T({n}, {c}, dtype={dt})\n"
                       f"out = {crit}(x, y, var)\nout.sum().backward()\nreturn {{'out': out, 'gx': x.grad, 'gv': var.grad}}\n", seed)
    else:
        crit = f"torch.nn.MultiMarginLoss(p={r.choice([1, 2])}, margin={r.choice([1.0, 0.5])}, reduction={red})"
        tgt = f"torch.tensor(rng.integers(0, {c}, size={n}))"
    body = (x + f"y = {tgt}\nout = {crit}(x, y)\n"
            "out.sum().backward()\n"
            "return {'out': out, 'g': [t.grad for t in (x,) if t.is_leaf] + ([x0.grad] if 'x0' in locals() else [])}\n")
    return Program("module", f"loss:{which}", body, seed)


# ------------------------------------------------------------------ optimizers and schedulers
def gen_optim(r, seed):
    name = r.choice(["SGD", "SGD", "Adam", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam",
                     "RAdam", "ASGD", "Rprop"])
    bad = r.random() < 0.08
    lr = r.choice([1e-3, 0.01, 0.1]) if not bad else r.choice([-0.1, -1e-3])
    wd = r.choice([0.0, 0.0, 1e-2, 0.1])
    mx = r.choice([False, False, True])
    kw = [f"lr={lr}"]
    if name == "SGD":
        mom = r.choice([0.0, 0.9, 0.5])
        nest = r.choice([False, True]) if mom > 0 or r.random() < 0.1 else False
        damp = 0.0 if nest else r.choice([0.0, 0.1])
        kw += [f"momentum={mom}", f"dampening={damp}", f"nesterov={nest}", f"weight_decay={wd}", f"maximize={mx}"]
    elif name in ("Adam", "AdamW"):
        kw += [f"betas=({r.choice([0.9, 0.5])}, {r.choice([0.999, 0.9])})", f"eps={r.choice([1e-8, 1e-3])}",
               f"weight_decay={wd}", f"amsgrad={r.choice([False, True])}", f"maximize={mx}"]
    elif name == "RMSprop":
        kw += [f"alpha={r.choice([0.99, 0.9])}", f"momentum={r.choice([0.0, 0.9])}", f"centered={r.choice([False, True])}",
               f"weight_decay={wd}", f"maximize={mx}"]
    elif name == "Adagrad":
        kw += [f"lr_decay={r.choice([0.0, 0.01])}", f"initial_accumulator_value={r.choice([0.0, 0.1])}", f"weight_decay={wd}", f"maximize={mx}"]
    elif name == "Adadelta":
        kw += [f"rho={r.choice([0.9, 0.5])}", f"weight_decay={wd}", f"maximize={mx}"]
    elif name == "Adamax":
        kw += [f"betas=({r.choice([0.9, 0.5])}, 0.999)", f"weight_decay={wd}", f"maximize={mx}"]
    elif name == "NAdam":
        kw += [f"momentum_decay={r.choice([4e-3, 1e-2])}", f"weight_decay={wd}", f"decoupled_weight_decay={r.choice([False, True])}", f"maximize={mx}"]
    elif name == "RAdam":
        kw += [f"weight_decay={wd}", f"decoupled_weight_decay={r.choice([False, True])}", f"maximize={mx}"]
    elif name == "ASGD":
        kw += [f"lambd={r.choice([1e-4, 1e-2])}", f"alpha={r.choice([0.75, 0.5])}", f"t0={r.choice([1.0, 1e6])}", f"weight_decay={wd}", f"maximize={mx}"]
    else:
        kw += [f"etas=({r.choice([0.5, 0.3])}, {r.choice([1.2, 1.5])})", f"step_sizes=(1e-6, {r.choice([50, 0.05])})", f"maximize={mx}"]
    if bad and r.random() < 0.5:
        kw[0] = "lr=0.01"
        b = r.choice(["eps=-1.0", "weight_decay=-0.5", "betas=(1.5, 0.9)", "momentum=-0.5", "nesterov=True, momentum=0.0"])
        keys = tuple(k.split("=")[0].strip() for k in b.split(", "))
        kw = [k for k in kw if not k.startswith(keys + (("dampening",) if "momentum" in b else ()))] + [b]
    dt = _dt(r)
    steps = r.randint(1, 6)
    groups = r.random() < 0.3
    params = ("[{'params': m[0].parameters()}, {'params': m[1].parameters(), 'lr': 0.05}]" if groups
              else "m.parameters()")
    sched = r.choice(["None"] * 3 + ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR",
                                     "OneCycleLR", "LinearLR", "ReduceLROnPlateau", "CosineAnnealingWarmRestarts"])
    sched_ctor = {"None": "None",
                  "StepLR": f"torch.optim.lr_scheduler.StepLR(opt, step_size={r.randint(1, 3)}, gamma={r.choice([0.1, 0.5])})",
                  "MultiStepLR": f"torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[1, 3], gamma={r.choice([0.1, 0.5])})",
                  "ExponentialLR": f"torch.optim.lr_scheduler.ExponentialLR(opt, gamma={r.choice([0.9, 0.5])})",
                  "CosineAnnealingLR": f"torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max={r.randint(2, 5)}, eta_min={r.choice([0.0, 1e-4])})",
                  "LambdaLR": "torch.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0 / (e + 1))",
                  "OneCycleLR": f"torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps={steps + 1}, anneal_strategy='{r.choice(['cos', 'linear'])}', cycle_momentum={name in ('SGD', 'Adam', 'AdamW') and r.random() < 0.5 and 'momentum=0.0' not in ' '.join(kw)})",
                  "LinearLR": "torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=3)",
                  "ReduceLROnPlateau": "torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, factor=0.5)",
                  "CosineAnnealingWarmRestarts": "torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2)"}[sched]
    norm_type = r.choice(["2.0", "1.0", "float('inf')"])
    clip = r.choice(["", "", "", f"    norms.append(torch.nn.utils.clip_grad_norm_(m.parameters(), {r.choice([0.1, 1.0])}, norm_type={norm_type}))\n",
                     f"    torch.nn.utils.clip_grad_value_(m.parameters(), {r.choice([0.01, 0.5])})\n"])
    reload = "" if r.random() < 0.8 else (
        "    sd = opt.state_dict()\n"
        f"    opt = torch.optim.{name}({params}, {', '.join(kw)})\n"
        "    opt.load_state_dict(sd)\n")
    if reload and sched != "None":
        reload = ""
    step_sched = ("sched.step(loss.item())" if sched == "ReduceLROnPlateau" else "sched.step()")
    body = (f"m = load(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))).to({dt})\n"
            f"x, y = T(5, 3, dtype={dt}), T(5, 2, dtype={dt})\n"
            f"opt = torch.optim.{name}({params}, {', '.join(kw)})\n"
            f"sched = {sched_ctor}\n"
            "losses, lrs, norms = [], [], []\n"
            f"for i in range({steps}):\n"
            f"    opt.zero_grad(set_to_none={r.choice([True, False])})\n"
            "    loss = ((m(x) - y) ** 2).mean()\n"
            "    loss.backward()\n"
            + clip +
            "    opt.step()\n"
            + reload +
            f"    if sched is not None:\n        {step_sched}\n"
            "    losses.append(loss.item())\n"
            "    lrs.append([g['lr'] for g in opt.param_groups])\n"
            "return {'params': list(m.parameters()), 'losses': losses, 'lrs': lrs, 'ngroups': len(opt.param_groups), 'norms': norms}\n")
    op = name + ("" if sched == "None" else ":" + sched) + (":bad" if bad else "")
    op += (":clip_norm" if "clip_grad_norm_" in clip else ":clip_value" if clip else "") + (":reload" if reload else "")
    return Program("optim", op, body, seed,
                   tol=20.0 * steps)


# ------------------------------------------------------------------ data
def gen_data(r, seed):
    n = r.randint(0, 11) if r.random() < 0.9 else 0
    bs = r.choice([1, 2, 3, 4, "None"])
    dl = r.choice([False, True])
    samp = r.choice(["none", "none", "shuffle", "random", "random_repl", "sequential", "subset", "batch", "weighted"])
    gen = "g = torch.Generator().manual_seed(7)\n"
    kw = f"batch_size={bs}, drop_last={dl}"
    compare_values = samp in ("none", "sequential")
    if samp == "shuffle":
        kw += ", shuffle=True, generator=g"
    elif samp == "random":
        kw += ", sampler=torch.utils.data.RandomSampler(ds, generator=g)"
    elif samp == "random_repl":
        kw += f", sampler=torch.utils.data.RandomSampler(ds, replacement=True, num_samples={r.randint(1, 7)}, generator=g)"
    elif samp == "sequential":
        kw += ", sampler=torch.utils.data.SequentialSampler(ds)"
    elif samp == "subset":
        kw += f", sampler=torch.utils.data.SubsetRandomSampler(list(range(0, {n}, 2)), generator=g)"
    elif samp == "weighted":
        kw += f", sampler=torch.utils.data.WeightedRandomSampler([1.0] * {n} + [0.0], {r.randint(1, 5)}, replacement=True, generator=g)"
    elif samp == "batch":
        kw = (f"batch_sampler=torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(ds), "
              f"batch_size={bs if bs != 'None' else 2}, drop_last={dl})")
        compare_values = True
    two = r.random() < 0.7
    body = (gen + f"ds = torch.utils.data.TensorDataset(T({n}, 3)" + (f", torch.arange({n})" if two else "") + ")\n"
            f"loader = torch.utils.data.DataLoader(ds, {kw})\n"
            "shapes, vals = [], []\n"
            "for b in loader:\n"
            "    shapes.append([list(t.shape) for t in b] if isinstance(b, (list, tuple)) else list(b.shape))\n"
            + ("    vals.append(b)\n" if compare_values else "") +
            "n = None\ntry:\n    n = len(loader)\nexcept TypeError:\n    n = 'no len'\n"
            "return {'len': n, 'count': len(shapes), 'shapes': shapes, 'vals': vals, 'ds_len': len(ds)}\n")
    return Program("data", f"DataLoader:{samp}", body, seed)


# ------------------------------------------------------------------ hooks
def gen_hooks(r, seed):
    which = r.choice(["tensor", "tensor", "node", "node_pre", "module_fwd", "module_bwd", "saved", "saved",
                      "retain_grad", "post_acc"])
    dt = _dt(r)
    if which == "tensor":
        ret = r.choice(["None", "g * 2", "g.t()", "g[0]", "g.double()", "g.float()", "g + 1", "(g, g)"])
        where = r.choice(["x", "y"])
        body = (f"x = T(3, 3, dtype={dt}, rg=True)\ny = x * 2\nz = y.sin()\nseen = []\n"
                f"def hook(g):\n    seen.append(g.clone())\n    return {ret}\n"
                f"h = {where}.register_hook(hook)\n"
                + ("h.remove()\n" if r.random() < 0.15 else "") +
                "z.sum().backward()\n"
                "return {'gx': x.grad, 'seen': seen}\n")
        return Program("hooks", f"tensor_hook:{where}:{ret}", body, seed)
    if which in ("node", "node_pre"):
        ret = r.choice(["None", "tuple(gi * 3 if gi is not None else None for gi in g)", "(g[0],) * 2", "g[0]", "()"])
        reg = "register_hook" if which == "node" else "register_prehook"
        sig = "def hook(g, go):\n    seen.append(len(g))\n" if which == "node" else "def hook(g):\n    seen.append(len(g))\n"
        body = (f"x = T(2, 3, dtype={dt}, rg=True)\nw = T(3, dtype={dt}, rg=True)\ny = x * w\nz = y.exp().sum()\nseen = []\n"
                + sig + f"    return {ret}\n"
                f"y.grad_fn.{reg}(hook)\n"
                "z.backward()\n"
                "return {'gx': x.grad, 'gw': w.grad, 'seen': seen, 'name': y.grad_fn.name()}\n")
        return Program("hooks", f"{reg}:{ret}", body, seed)
    if which == "module_fwd":
        pre = r.choice([True, False])
        ret = r.choice(["None", "out * 2", "(out,)"]) if not pre else r.choice(["None", "(args[0] * 2,)", "args[0] * 2"])
        wk = r.choice([False, True])
        if pre:
            hdef = ("def hook(mod, args, kwargs):\n    seen.append(len(args))\n    r = " + ret + "\n    return None if r is None else (r if isinstance(r, tuple) else (r,), kwargs)\n"
                    if wk else f"def hook(mod, args):\n    seen.append(len(args))\n    return {ret}\n")
            reg = f"m.register_forward_pre_hook(hook, with_kwargs={wk})"
        else:
            hdef = (f"def hook(mod, args, kwargs, out):\n    seen.append(len(args))\n    return {ret}\n" if wk
                    else f"def hook(mod, args, out):\n    seen.append(len(args))\n    return {ret}\n")
            reg = f"m.register_forward_hook(hook, with_kwargs={wk})"
        body = (f"m = load(torch.nn.Linear(3, 2)).to({dt})\nseen = []\n" + hdef + f"h = {reg}\n"
                f"x = T(4, 3, dtype={dt}, rg=True)\nout = m(x)\nif isinstance(out, tuple):\n    out = out[0]\n"
                + _backward() + "h.remove()\nout2 = m(x)\n"
                "return {'out': out, 'out2': out2, 'gx': x.grad, 'seen': seen}\n")
        return Program("hooks", f"forward_{'pre_' if pre else ''}hook:{ret}:kw={wk}", body, seed)
    if which == "module_bwd":
        pre = r.choice([True, False])
        ret = r.choice(["None", "tuple(g * 2 for g in go)", "(go[0] * 2, go[0])"])
        mod = r.choice(["torch.nn.Linear(3, 2)", "torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())", "torch.nn.ReLU()"])
        if pre:
            hdef = f"def hook(mod, go):\n    seen.append([None if g is None else list(g.shape) for g in go])\n    return {ret}\n"
            reg = "m.register_full_backward_pre_hook(hook)"
        else:
            ret2 = ret.replace("go", "gi")
            hdef = (f"def hook(mod, gi, go):\n    seen.append([None if g is None else list(g.shape) for g in gi + go])\n"
                    f"    gi = tuple(g for g in gi)\n    return {ret2}\n")
            reg = "m.register_full_backward_hook(hook)"
        xrg = r.choice([True, True, False])
        body = (f"m = load({mod}).to({dt})\nseen = []\n" + hdef + f"{reg}\n"
                f"x = T(4, 3, dtype={dt}, rg={xrg})\nout = m(x)\n" + _backward() +
                "return {'out': out, 'gx': x.grad, 'grads': grads(m), 'seen': seen}\n")
        return Program("hooks", f"full_backward_{'pre_' if pre else ''}hook:{ret}:{mod.split('(')[0]}:xrg={xrg}", body, seed)
    if which == "saved":
        pack = r.choice(["t", "t * 1", "t.clone()", "t.detach()", "(t.shape, t.clone())", "None"])
        unpack = {"(t.shape, t.clone())": "p[1]", "None": "p"}.get(pack, "p")
        fn = r.choice(["(x * y).sum()", "x.exp().sum()", "(x @ y.t()).sin().sum()", "x.pow(3).sum()", "torch.tanh(x * y).sum()"])
        body = (f"x = T(2, 2, dtype={dt}, rg=True)\ny = T(2, 2, dtype={dt}, rg=True)\nn = [0, 0]\n"
                f"def pack(t):\n    n[0] += 1\n    return {pack}\n"
                f"def unpack(p):\n    n[1] += 1\n    return {unpack}\n"
                f"with torch.autograd.graph.saved_tensors_hooks(pack, unpack):\n    z = {fn}\n"
                "z.backward()\n"
                "return {'z': z, 'gx': x.grad, 'gy': y.grad, 'counts': n}\n")
        return Program("hooks", f"saved_tensors_hooks:{pack}:{fn.split('(')[0] or fn}", body, seed)
    if which == "retain_grad":
        body = (f"x = T(3, dtype={dt}, rg=True)\ny = x * 3\ny.retain_grad()\nz = y.view(3, 1)\nz.retain_grad()\n"
                "(z.sin() * 2).sum().backward()\n"
                + ("(y * 1).sum().backward()\n" if r.random() < 0.3 else "") +
                "return {'gx': x.grad, 'gy': y.grad, 'gz': z.grad, 'rg': [y.retains_grad, x.retains_grad]}\n")
        return Program("hooks", "retain_grad", body, seed)
    body = (f"x = T(3, dtype={dt}, rg=True)\nseen = []\n"
            "x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.clone()))\n"
            "(x * x).sum().backward()\n(x * 2).sum().backward()\n"
            "return {'gx': x.grad, 'seen': seen}\n")
    return Program("hooks", "post_accumulate_grad_hook", body, seed)


# ------------------------------------------------------------------ custom autograd.Function
def gen_function(r, seed):
    variant = r.choice(["ok", "ok", "too_many_grads", "too_few_grads", "wrong_shape", "wrong_dtype", "none_grad",
                        "nontensor_arg", "mark_dirty", "needs_input_grad", "save_output", "setup_context",
                        "non_differentiable", "return_nontensor_grad", "once_differentiable"])
    dt = _dt(r)
    fwd_extra, ret = "", "grad * ctx.k * torch.cos(x), None"
    if variant == "too_many_grads":
        ret = "grad * ctx.k * torch.cos(x), None, None"
    elif variant == "too_few_grads":
        ret = "grad * ctx.k * torch.cos(x)"
    elif variant == "wrong_shape":
        ret = r.choice(["(grad * torch.cos(x)).sum(), None", "(grad * torch.cos(x)).reshape(-1), None",
                        "torch.cat([grad, grad]), None", "(grad * torch.cos(x))[None], None"])
    elif variant == "wrong_dtype":
        ret = r.choice(["(grad * torch.cos(x)).float(), None", "(grad * torch.cos(x)).double(), None",
                        "(grad > 0).long(), None"])
    elif variant == "none_grad":
        ret = "None, None"
    elif variant == "return_nontensor_grad":
        ret = r.choice(["1.0, None", "'g', None", "[grad], None"])
    base = ("class F(torch.autograd.Function):\n"
            "    @staticmethod\n    def forward(ctx, x, k):\n        ctx.save_for_backward(x)\n        ctx.k = k\n"
            "        return torch.sin(x) * k\n"
            "    @staticmethod\n    def backward(ctx, grad):\n        x, = ctx.saved_tensors\n"
            f"        return {ret}\n")
    call = "y = F.apply(x, 2.0)"
    if variant == "nontensor_arg":
        call = f"y = F.apply(x, {r.choice(['3', 'torch.tensor(2.0, dtype=x.dtype)', 'np.float64(2.0)'])})"
    if variant == "mark_dirty":
        base = ("class F(torch.autograd.Function):\n"
                "    @staticmethod\n    def forward(ctx, x, k):\n        x.mul_(k)\n        ctx.mark_dirty(x)\n        return x\n"
                "    @staticmethod\n    def backward(ctx, grad):\n        return grad * ctx.k if hasattr(ctx, 'k') else grad * 2.0, None\n")
        call = "x = x.clone()\ny = F.apply(x, 2.0)" if r.random() < 0.7 else "y = F.apply(x, 2.0)"
    if variant == "needs_input_grad":
        base = ("class F(torch.autograd.Function):\n"
                "    @staticmethod\n    def forward(ctx, x, w):\n        ctx.save_for_backward(x, w)\n        return x * w\n"
                "    @staticmethod\n    def backward(ctx, grad):\n        x, w = ctx.saved_tensors\n"
                "        seen.append(list(ctx.needs_input_grad))\n"
                "        return (grad * w if ctx.needs_input_grad[0] else None), (grad * x if ctx.needs_input_grad[1] else None)\n")
        call = f"w = T(3, 2, dtype={dt}, rg={r.choice([True, False])})\ny = F.apply(x, w)"
    if variant == "save_output":
        base = ("class F(torch.autograd.Function):\n"
                "    @staticmethod\n    def forward(ctx, x, k):\n        y = torch.exp(x) * k\n        ctx.save_for_backward(y)\n        return y\n"
                "    @staticmethod\n    def backward(ctx, grad):\n        y, = ctx.saved_tensors\n        return grad * y, None\n")
        if r.random() < 0.4:
            call = "y = F.apply(x, 2.0)\ny.add_(1)"
    if variant == "setup_context":
        base = ("class F(torch.autograd.Function):\n"
                "    @staticmethod\n    def forward(x, k):\n        return torch.sin(x) * k\n"
                "    @staticmethod\n    def setup_context(ctx, inputs, output):\n        x, k = inputs\n        ctx.save_for_backward(x)\n        ctx.k = k\n"
                "    @staticmethod\n    def backward(ctx, grad):\n        x, = ctx.saved_tensors\n        return grad * ctx.k * torch.cos(x), None\n")
    if variant == "non_differentiable":
        base = ("class F(torch.autograd.Function):\n"
                "    @staticmethod\n    def forward(ctx, x, k):\n        a = x * k\n        b = (x > 0)\n        ctx.mark_non_differentiable(b)\n        return a, b\n"
                "    @staticmethod\n    def backward(ctx, ga, gb):\n        seen.append(gb is None)\n        return ga * ctx.k if hasattr(ctx, 'k') else ga * 2.0, None\n")
        call = "y, mask = F.apply(x, 2.0)\nextra = [mask, mask.requires_grad]"
    if variant == "once_differentiable":
        base = ("once_differentiable = torch.autograd.function.once_differentiable\n"
                "class F(torch.autograd.Function):\n"
                "    @staticmethod\n    def forward(ctx, x, k):\n        ctx.save_for_backward(x)\n        return x * x * k\n"
                "    @staticmethod\n    @once_differentiable\n    def backward(ctx, grad):\n        x, = ctx.saved_tensors\n        return grad * 2 * x * 2.0, None\n")
        call = "y = F.apply(x, 2.0)"
        if r.random() < 0.5:
            body = (f"seen = []\n{base}x = T(3, 2, dtype={dt}, rg=True)\n{call}\n"
                    "g, = torch.autograd.grad(y.sum(), x, create_graph=True)\n"
                    "g.sum().backward()\nreturn {'g': g, 'gx': x.grad}\n")
            return Program("function", "Function:once_differentiable:double_backward", body, seed)
    body = (f"seen = []\nextra = []\n{base}x = T(3, 2, dtype={dt}, rg=True)\n{call}\n"
            "y.sum().backward() if y.requires_grad else None\n"
            "return {'y': y, 'gx': x.grad, 'seen': seen, 'extra': extra, 'rg': y.requires_grad, "
            "'fn': None if y.grad_fn is None else y.grad_fn.name()}\n")
    return Program("function", f"Function:{variant}", body, seed)


# ------------------------------------------------------------------ checkpoint
def gen_checkpoint(r, seed):
    reent = r.choice([True, False])
    dt = _dt(r)
    fn = r.choice(["lambda a: torch.tanh(lin(a)) * 2", "lambda a: lin(a).relu().sum(1)", "lambda a: (a * a).exp()",
                   "lambda a: torch.nn.functional.dropout(lin(a), 0.0)"])
    xrg = r.choice([True, True, False])
    body = (f"lin = load(torch.nn.Linear(3, 3)).to({dt})\nf = {fn}\n"
            f"x = T(4, 3, dtype={dt}, rg={xrg})\n"
            f"out = torch.utils.checkpoint.checkpoint(f, x, use_reentrant={reent})\n"
            + _backward() +
            "ref = f(x.detach().requires_grad_())\n"
            "return {'out': out, 'ref': ref, 'gx': x.grad, 'grads': grads(lin)}\n")
    seq = r.random() < 0.3
    if seq:
        body = (f"m = load(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3), torch.nn.ReLU())).to({dt})\n"
                f"x = T(4, 3, dtype={dt}, rg={xrg})\n"
                f"out = torch.utils.checkpoint.checkpoint_sequential(m, {r.randint(1, 3)}, x, use_reentrant={reent})\n"
                + _backward() + "return {'out': out, 'gx': x.grad, 'grads': grads(m)}\n")
    return Program("checkpoint", ("checkpoint_sequential" if seq else "checkpoint") + f":reentrant={reent}:xrg={xrg}", body, seed)


# ------------------------------------------------------------------ fx
def gen_fx(r, seed):
    dt = _dt(r)
    fwd = r.choice(["return torch.relu(self.l(x)) + x.sum(-1, keepdim=True)",
                    "return self.l(x).softmax(-1) * 2",
                    "y = self.l(x)\n        return y.transpose(0, 1).reshape(-1)",
                    "return torch.cat([self.l(x), x], dim=1).mean(0)",
                    "return self.l(x)[:, :2] @ x[:2, :2]",
                    "return torch.nn.functional.gelu(self.l(x)).view(x.shape[0], -1)",
                    "return self.l(x) if x.shape[0] > 2 else x"])
    body = ("class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.l = torch.nn.Linear(3, 3)\n"
            f"    def forward(self, x):\n        {fwd}\n"
            f"m = load(M()).to({dt})\n"
            "gm = torch.fx.symbolic_trace(m)\n"
            f"x = T(4, 3, dtype={dt}, rg=True)\n"
            "out = gm(x)\n" + _backward() +
            "ops = [n.op for n in gm.graph.nodes]\n"
            "return {'out': out, 'ref': m(x), 'gx': x.grad, 'grads': grads(gm), 'ops': [ops.count(k) for k in ('placeholder', 'output', 'call_module', 'get_attr')]}\n")
    return Program("fx", "symbolic_trace:" + fwd.split("(")[0].replace("return ", "").strip()[:20], body, seed)


# ------------------------------------------------------------------ autograd.grad
def gen_grad(r, seed):
    dt = _dt(r)
    v = r.choice(["basic", "retain", "create_graph", "allow_unused", "unused_error", "grad_outputs_shape",
                  "grad_outputs_dtype", "nonscalar", "second_backward", "no_grad_input", "grad_outputs_ok",
                  "is_grads_batched", "materialize"])
    head = f"x = T(3, 2, dtype={dt}, rg=True)\nw = T(2, dtype={dt}, rg=True)\nu = T(2, dtype={dt}, rg=True)\ny = (x * w).sin()\n"
    if v == "basic":
        tail = "g = torch.autograd.grad(y.sum(), [x, w])\nreturn list(g)\n"
    elif v == "retain":
        tail = (f"g1 = torch.autograd.grad(y.sum(), x, retain_graph={r.choice([True, False, 'None'])})\n"
                "g2 = torch.autograd.grad(y.sum(), w)\nreturn [g1, g2]\n")
    elif v == "create_graph":
        tail = ("g, = torch.autograd.grad(y.sum(), x, create_graph=True)\n"
                "h = torch.autograd.grad((g * g).sum(), [x, w], allow_unused=True)\nreturn [g, list(h), g.requires_grad]\n")
    elif v == "allow_unused":
        tail = f"g = torch.autograd.grad(y.sum(), [x, u], allow_unused=True, materialize_grads={r.choice([True, False])})\nreturn list(g)\n"
    elif v == "unused_error":
        tail = "g = torch.autograd.grad(y.sum(), [x, u])\nreturn list(g)\n"
    elif v == "grad_outputs_shape":
        tail = f"g = torch.autograd.grad(y, x, grad_outputs={r.choice(['T(2, 3, dtype=y.dtype)', 'T(3, dtype=y.dtype)', 'T(1, 2, dtype=y.dtype)', 'T(6, dtype=y.dtype)'])})\nreturn list(g)\n"
    elif v == "grad_outputs_dtype":
        tail = f"g = torch.autograd.grad(y, x, grad_outputs={r.choice(['torch.ones(3, 2, dtype=torch.float16)', 'torch.ones(3, 2, dtype=torch.int64)', 'torch.ones(3, 2, dtype=torch.float64)', 'torch.ones(3, 2, dtype=torch.float32)', 'torch.ones(3, 2, dtype=torch.bool)'])})\nreturn list(g)\n"
    elif v == "grad_outputs_ok":
        tail = "g = torch.autograd.grad([y, (x * 2).sum()], [x], grad_outputs=[torch.ones_like(y), None])\nreturn list(g)\n"
    elif v == "nonscalar":
        tail = "g = torch.autograd.grad(y, x)\nreturn list(g)\n"
    elif v == "second_backward":
        tail = f"s = y.sum()\ns.backward(retain_graph={r.choice([True, False])})\ns.backward()\nreturn [x.grad, w.grad]\n"
    elif v == "no_grad_input":
        tail = "c = T(2, dtype=y.dtype)\ng = torch.autograd.grad((y * c).sum(), [x, c])\nreturn list(g)\n"
    elif v == "is_grads_batched":
        tail = "g = torch.autograd.grad(y, x, grad_outputs=torch.ones(4, 3, 2, dtype=y.dtype), is_grads_batched=True)\nreturn list(g)\n"
    else:
        tail = "g = torch.autograd.grad(y.sum(), [x, w, u], allow_unused=True, materialize_grads=True)\nreturn list(g)\n"
    return Program("grad", f"autograd.grad:{v}", head + tail, seed)


# ------------------------------------------------------------------ in-place ops on views
def gen_inplace(r, seed):
    dt = _dt(r)
    view = r.choice(["b[1:]", "b[:, 1]", "b.t()", "b.transpose(0, 1)[1:]", "b.diagonal()", "b.view(-1)", "b[0]",
                     "b.unsqueeze(0)", "b.expand(2, 3, 3)", "b[::2]", "b.narrow(1, 0, 2)", "b.select(0, 1)",
                     "b.unfold(0, 2, 2)", "b.as_strided((2, 2), (1, 3))", "b.split(1)[0]", "b.chunk(3, 1)[1]",
                     "b.unbind(0)[1]", "b.real" if False else "b.squeeze()", "b.permute(1, 0)"])
    op = r.choice(["add_(1)", "mul_(2)", "zero_()", "copy_(torch.ones_like(v))", "clamp_(-0.5, 0.5)", "sin_()",
                   "exp_()", "fill_(3.0)", "addcmul_(v, v)", "div_(2)", "sub_(v)", "pow_(2)", "relu_()", "neg_()"])
    mode = r.choice(["base_rg", "leaf_view", "no_grad", "saved_then_modify", "view_of_nonleaf", "then_view_grad",
                     "under_no_grad"])
    if mode == "base_rg":
        body = (f"a = T(3, 3, dtype={dt}, rg=True)\nb = a * 1\nv = {view}\nv.{op}\n"
                "out = (b * b).sum()\nout.backward()\n"
                "return {'b': b, 'v': v, 'ga': a.grad, 'vrg': v.requires_grad}\n")
    elif mode == "leaf_view":
        body = (f"b = T(3, 3, dtype={dt}, rg=True)\nv = {view}\nv.{op}\nreturn {{'b': b}}\n")
    elif mode == "no_grad":
        body = (f"b = T(3, 3, dtype={dt})\nv = {view}\nv.{op}\nreturn {{'b': b, 'v': v, 'ver': b._version == v._version}}\n")
    elif mode == "under_no_grad":
        body = (f"b = T(3, 3, dtype={dt}, rg=True)\nwith torch.no_grad():\n    v = {view}\n    v.{op}\n"
                "(b * 2).sum().backward()\n"
                "return {'b': b, 'v': v, 'g': b.grad, 'rg': v.requires_grad}\n")
    elif mode == "saved_then_modify":
        body = (f"a = T(3, 3, dtype={dt}, rg=True)\nb = a.sigmoid()\ny = b * b\nv = {view}\nv.{op}\n"
                "y.sum().backward()\nreturn {'ga': a.grad}\n")
    elif mode == "view_of_nonleaf":
        body = (f"a = T(3, 3, dtype={dt}, rg=True)\nc = T(3, 3, dtype={dt}, rg=True)\nb = a.clone()\nv = {view}\n"
                f"v.mul_(torch.ones_like(v) * 2)\nb.add_(c)\nb.exp().sum().backward()\n"
                "return {'b': b, 'ga': a.grad, 'gc': c.grad}\n")
    else:
        body = (f"a = T(3, 3, dtype={dt}, rg=True)\nb = a * 2\nv = {view}\nw = T(*v.shape, dtype={dt}, rg=True)\nv.mul_(w)\n"
                "(b.cos()).sum().backward()\n"
                "return {'b': b, 'ga': a.grad, 'gw': w.grad, 'ver': b._version}\n")
    return Program("inplace", f"{mode}:{view.split('(')[0] if '(' in view and not view.startswith('b[') else view}:{op.split('(')[0]}", body, seed)


GENERATORS = [(gen_module, 30), (gen_optim, 14), (gen_data, 6), (gen_hooks, 12), (gen_function, 10),
              (gen_checkpoint, 4), (gen_fx, 4), (gen_grad, 8), (gen_inplace, 12)]


def generate(seed, i):
    """Program number i of the run with this seed (deterministic)."""
    r = random.Random(seed * 1_000_003 + i)
    gens, weights = zip(*GENERATORS)
    g = r.choices(gens, weights)[0]
    return g(r, (seed * 7919 + i) % (2 ** 31))
