"""Optimizer hooks against torch: step pre/post hooks (per optimizer and global), state_dict and
load_state_dict pre/post hooks with `prepend`, the call order, return values that replace arguments
or state dicts, removal through the handles, and the error for a bad pre-hook return."""
import importlib

import pytest

from conftest import fg
from parity import same


def _opt(L, cls="SGD"):
    p = L.nn.Parameter(L.ones(2))
    p.grad = L.full((2,), 0.5)
    return getattr(L.optim, cls)([p], lr=0.1), p


@pytest.mark.parametrize("cls", ["SGD", "Adam"])
def test_step_hook_order_and_removal(cls):
    def run(L):
        log = []
        opt, p = _opt(L, cls)
        other, _ = _opt(L, "Adagrad")
        h1 = opt.register_step_pre_hook(lambda o, a, k: log.append(("pre1", o is opt, len(a), sorted(k))))
        h2 = opt.register_step_pre_hook(lambda o, a, k: log.append(("pre2",)))
        h3 = opt.register_step_post_hook(lambda o, a, k: log.append(("post1", o is opt)))
        mod = importlib.import_module(L.__name__ + ".optim.optimizer")  # torch.optim drops the attribute
        g1 = mod.register_optimizer_step_pre_hook(lambda o, a, k: log.append(("gpre", type(o).__name__)))
        g2 = mod.register_optimizer_step_post_hook(
            lambda o, a, k: log.append(("gpost", type(o).__name__)))
        try:
            opt.step()
            log.append("--")
            other.step()  # only the global hooks
            log.append("--")
            h1.remove()
            h3.remove()
            g1.remove()
            opt.step(closure=lambda: log.append("closure"))
            log.append("--")
            h2.remove()
        finally:
            g1.remove()
            g2.remove()
        opt.step()
        return log, p.detach().clone()

    same(run)


def test_pre_hook_replaces_arguments():
    def run(L):
        log = []
        opt, p = _opt(L)

        def swap(o, args, kwargs):
            return args, {"closure": lambda: log.append("new closure") or 3.0}

        opt.register_step_pre_hook(swap)
        opt.register_step_post_hook(lambda o, a, k: log.append(("post sees", sorted(k))))
        loss = opt.step(closure=lambda: log.append("old closure") or 1.0)
        return log, loss

    same(run)


def test_pre_hook_bad_return_raises():
    def run(L):
        opt, _ = _opt(L)
        opt.register_step_pre_hook(lambda o, a, k: 5)
        try:
            opt.step()
        except RuntimeError as e:
            return "RuntimeError", "must return None or a tuple of (new_args, new_kwargs)" in str(e)
        return None

    same(run)


def test_state_dict_hooks():
    def run(L):
        log = []
        opt, _ = _opt(L, "Adam")
        opt.step()
        opt.register_state_dict_pre_hook(lambda o: log.append("pre_a"))
        opt.register_state_dict_pre_hook(lambda o: log.append("pre_b"), prepend=True)

        def add_key(o, sd):
            log.append(("post_a", sorted(sd)))
            sd["extra"] = 1

        def replace(o, sd):
            log.append(("post_b", sorted(sd)))
            return {"state": sd["state"], "param_groups": sd["param_groups"], "replaced": True}

        opt.register_state_dict_post_hook(add_key)
        h = opt.register_state_dict_post_hook(replace)
        sd = opt.state_dict()
        out = [sorted(sd), list(log)]
        h.remove()
        log.clear()
        out.append((sorted(opt.state_dict()), log))
        return out

    same(run)


def test_load_state_dict_hooks():
    def run(L):
        log = []
        opt, p = _opt(L, "Adam")
        opt.step()
        sd = opt.state_dict()
        opt2, _ = _opt(L, "Adam")

        def change_lr(o, sd):
            log.append(("pre", sorted(sd)))
            sd = dict(sd)
            sd["param_groups"] = [dict(g, lr=0.5) for g in sd["param_groups"]]
            return sd

        opt2.register_load_state_dict_pre_hook(lambda o, sd: log.append("pre_first"), prepend=True)
        opt2.register_load_state_dict_pre_hook(change_lr)
        opt2.register_load_state_dict_post_hook(lambda o: log.append(("post", o.param_groups[0]["lr"])))
        h = opt2.register_load_state_dict_post_hook(lambda o: log.append("post_first"), prepend=True)
        opt2.load_state_dict(sd)
        out = [list(log), sd["param_groups"][0]["lr"], opt2.param_groups[0]["lr"]]
        h.remove()
        log.clear()
        opt2.load_state_dict(sd)
        out.append(log)
        return out

    same(run)


def test_hooks_with_scheduler_and_handle_context():
    def run(L):
        log = []
        opt, _ = _opt(L)
        sched = L.optim.lr_scheduler.StepLR(opt, 1, 0.5)
        with opt.register_step_post_hook(lambda o, a, k: log.append(o.param_groups[0]["lr"])):
            for _ in range(3):
                opt.step()
                sched.step()
        opt.step()
        return log, hasattr(opt, "_optimizer_step_pre_hooks"), len(opt._optimizer_step_post_hooks)

    same(run)


def test_module_level_names():
    import torch.optim.optimizer as torch_optimizer

    fg_optimizer = importlib.import_module(fg.__name__ + ".optim.optimizer")
    assert fg_optimizer.__all__ == torch_optimizer.__all__


def test_deepcopy_and_pickle_keep_state_and_drop_hooks():
    import copy
    import pickle

    def run(L):
        log = []
        p = L.nn.Parameter(L.ones(2))
        p.grad = L.full((2,), 0.5)
        opt = L.optim.SGD([p], lr=0.1, momentum=0.9)
        opt.register_step_post_hook(lambda o, a, k: log.append("hook"))
        opt.step()
        out = []
        for clone in (copy.deepcopy(opt), pickle.loads(pickle.dumps(opt))):
            q = clone.param_groups[0]["params"][0]
            q.grad = L.full((2,), 0.25)
            clone.step()  # the copy's hooks are gone; its state is keyed by its own parameter
            out.append((q is p, q.detach().clone(), clone.state[q]["momentum_buffer"].clone(),
                        len(clone._optimizer_step_post_hooks)))
        return out, log, p.detach().clone()

    same(run)
