"""torch.optim.LBFGS: limited-memory BFGS over all parameters flattened into one vector.

One `step(closure)` runs up to `max_iter` iterations: a search direction from the two-loop recursion
over the last `history_size` curvature pairs (s, y), then either a fixed step of `lr` or a strong-Wolfe
line search (bracketing, then zoom with cubic interpolation). The scalars of the recursion (y·s, rho,
the initial Hessian scale, alpha, the step length) stay 0-dim tensors of the parameters' dtype, as in
torch, so float32 runs round the way torch's do; state uses torch's keys (func_evals, n_iter, d, t,
old_dirs, old_stps, ro, H_diag, prev_flat_grad, prev_loss, al), on the first parameter.
"""

from .. import _C
from ..autograd.grad_mode import enable_grad, no_grad
from .optimizer import Optimizer, _check_lr, _scalar

__all__ = ["LBFGS"]


def _cubic_min(p1, p2, bounds=None):
    """Minimiser of the cubic through two points (x, f, f') of a 1-D function, clamped to `bounds`
    (default: the interval between the points); the midpoint when the cubic has no minimum."""
    x1, f1, g1 = p1
    x2, f2, g2 = p2
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    # Nocedal & Wright (3.59): d1 = g1 + g2 - 3 (f1 - f2)/(x1 - x2), d2 = sqrt(d1^2 - g1 g2)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1**2 - g1 * g2
    if not disc >= 0:
        return (lo + hi) / 2.0
    d2 = disc.sqrt()
    if x1 <= x2:
        x = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        x = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(x, lo), hi)


class _Point:
    """One trial of the line search: step length t, loss f, flat gradient g, slope gtd = g·d."""

    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Line search along d for a step satisfying the strong Wolfe conditions
    f(t) <= f(0) + c1 t f'(0) and |f'(t)| <= -c2 f'(0). `evaluate(t)` returns (loss, flat grad) at
    x + t d. Returns (loss, grad, t, evaluations)."""
    d_norm = d.abs().max()
    start = _Point(0, f, g.clone(), gtd)

    def trial(step):
        loss, grad = evaluate(step)
        return _Point(step, loss, grad, grad.dot(d))

    def sufficient_decrease(p):
        return not p.f > f + c1 * p.t * gtd

    def curvature_ok(p):
        return abs(p.gtd) <= -c2 * gtd

    # phase 1: grow the step until an interval [lo, hi] is known to hold an acceptable point
    prev, cur = start, trial(t)
    evals, iters = 1, 0
    bracket, found = None, False
    while iters < max_ls:
        if not sufficient_decrease(cur) or (iters > 1 and cur.f >= prev.f):
            bracket = [prev, cur]
            break
        if curvature_ok(cur):
            bracket, found = [cur], True
            break
        if cur.gtd >= 0:
            bracket = [prev, cur]
            break
        # extrapolate: a cubic step between 1.01 t and 10 t
        nxt = _cubic_min((prev.t, prev.f, prev.gtd), (cur.t, cur.f, cur.gtd),
                         bounds=(cur.t + 0.01 * (cur.t - prev.t), cur.t * 10))
        prev, cur = cur, trial(nxt)
        evals += 1
        iters += 1
    if iters == max_ls:
        bracket = [_Point(0, f, g, None), cur]

    # phase 2 (zoom): shrink the interval by cubic interpolation, keeping bracket[lo] the lower loss
    stalled = False
    lo, hi = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    while not found and iters < max_ls:
        a, b = bracket
        if abs(b.t - a.t) * d_norm < tolerance_change:
            break
        step = _cubic_min((a.t, a.f, a.gtd), (b.t, b.f, b.gtd))
        t_max, t_min = max(a.t, b.t), min(a.t, b.t)
        # keep the trial at least 10% of the interval away from its ends when progress stalls
        margin = 0.1 * (t_max - t_min)
        if min(t_max - step, step - t_min) < margin:
            if stalled or step >= t_max or step <= t_min:
                step = t_max - margin if abs(step - t_max) < abs(step - t_min) else t_min + margin
                stalled = False
            else:
                stalled = True
        else:
            stalled = False
        cur = trial(step)
        evals += 1
        iters += 1
        if not sufficient_decrease(cur) or cur.f >= bracket[lo].f:
            bracket[hi] = cur
            lo, hi = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if curvature_ok(cur):
                found = True
            elif cur.gtd * (bracket[hi].t - bracket[lo].t) >= 0:
                bracket[hi] = bracket[lo]  # the slope points away from hi: the old lo becomes hi
            bracket[lo] = cur
    best = bracket[lo]
    return best.f, best.g, best.t, evals


def _search_direction(grad, dirs, steps, rhos, h_diag, alphas):
    """The two-loop recursion: -H·grad for the L-BFGS inverse-Hessian estimate H built from the pairs
    (s_i = steps[i], y_i = dirs[i], rho_i = 1/(y_i·s_i)) on top of h_diag·I."""
    q = grad.neg()
    for i in reversed(range(len(dirs))):
        alphas[i] = steps[i].dot(q) * rhos[i]
        q.add_(dirs[i], alpha=-_scalar(alphas[i]))
    r = q * h_diag
    for i in range(len(dirs)):
        beta = dirs[i].dot(r) * rhos[i]
        r.add_(steps[i], alpha=_scalar(alphas[i] - beta))
    return r


class LBFGS(Optimizer):
    """L-BFGS (torch.optim.LBFGS). One parameter group only; `step` needs a closure that clears the
    gradients, computes the loss, calls backward and returns the loss."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None, *, maximize=False):
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn,
                        maximize=maximize)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    # ---- the parameters as one flat vector ----------------------------------------------------

    def _numel(self):
        if self._numel_cache is None:
            self._numel_cache = sum(p.numel() for p in self._params)
        return self._numel_cache

    def _gather_flat_grad(self):
        parts = []
        for p in self._params:
            if p.grad is None:
                parts.append(_C.zeros(p.numel(), dtype=p.dtype, device=p.device))
            else:
                parts.append(p.grad.reshape(-1))
        flat = _C.cat(parts, 0)
        if self.param_groups[0].get("maximize", False):
            flat = flat.neg()
        return flat

    def _add_grad(self, step_size, update):
        """params += step_size · update (update flat)."""
        alpha = _scalar(step_size)
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(update[offset:offset + n].view_as(p), alpha=alpha)
            offset += n
        if offset != self._numel():
            raise AssertionError(f"Expected offset {offset} to equal {self._numel()}")

    def _clone_param(self):
        return [p.clone() for p in self._params]

    def _set_param(self, params_data):
        for p, data in zip(self._params, params_data):
            p.copy_(data)

    def _directional_evaluate(self, closure, x, t, d):
        """(loss, flat grad) at x + t·d; the parameters are put back to x afterwards."""
        self._add_grad(t, d)
        loss = float(closure())
        if self.param_groups[0].get("maximize", False):
            loss = -loss
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    # ---- step ---------------------------------------------------------------------------------

    def step(self, closure):
        """Run up to max_iter iterations; returns the loss the closure gave at the starting point."""
        if len(self.param_groups) != 1:
            raise AssertionError(f"Expected exactly one param_group, but got {len(self.param_groups)}")

        def evaluate():
            with enable_grad():
                return closure()

        with no_grad():
            if len(self._params) == 0:
                return evaluate()
            return self._iterate(evaluate)

    def _iterate(self, closure):
        group = self.param_groups[0]
        lr = _scalar(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]
        sign = -1.0 if group.get("maximize", False) else 1.0

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = closure()
        loss = sign * float(orig_loss)
        evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max() <= tolerance_grad:  # already optimal
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            if state["n_iter"] == 1:  # steepest descent to start
                d = flat_grad.neg()
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad.sub(prev_flat_grad)
                s = d.mul(t)
                ys = y.dot(s)
                if ys > 1e-10:  # keep the pair only when the curvature is positive
                    if len(old_dirs) == history_size:
                        del old_dirs[0], old_stps[0], ro[0]
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)  # scale of the initial inverse Hessian, (s·y)/(y·y)
                if "al" not in state:
                    state["al"] = [None] * history_size
                d = _search_direction(flat_grad, old_dirs, old_stps, ro, H_diag, state["al"])

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone()
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss

            if state["n_iter"] == 1:  # a first step no longer than 1 in the L1 norm of the gradient
                inv = 1.0 / flat_grad.abs().sum()
                t = (inv if inv < 1.0 else 1.0) * lr
            else:
                t = lr

            gtd = flat_grad.dot(d)  # directional derivative
            if gtd > -tolerance_change:
                break

            ls_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x0 = self._clone_param()
                direction = d

                def at(step):
                    return self._directional_evaluate(closure, x0, step, direction)

                loss, flat_grad, t, ls_evals = _strong_wolfe(at, t, d, loss, flat_grad, gtd,
                                                             max_ls=max_eval - evals)
                self._add_grad(t, d)
                opt_cond = flat_grad.abs().max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:  # the last iteration's loss is the next step's first evaluation
                    loss = sign * float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = flat_grad.abs().max() <= tolerance_grad
                    ls_evals = 1
            evals += ls_evals
            state["func_evals"] += ls_evals

            if n_iter == max_iter or evals >= max_eval or opt_cond:
                break
            if d.mul(t).abs().max() <= tolerance_change:  # the step no longer moves the parameters
                break
            if abs(loss - prev_loss) < tolerance_change:  # nor the loss
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss
