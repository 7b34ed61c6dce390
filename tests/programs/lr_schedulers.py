"""Learning-rate schedulers as training scripts use them: one scheduler.step() per epoch (or per batch
for OneCycleLR), get_last_lr(), ReduceLROnPlateau fed a validation metric, SequentialLR chaining a
linear warmup into cosine annealing, chained schedulers, and a scheduler state_dict round trip."""
import torch
import torch.nn as nn
from torch.optim import SGD, Adam
from torch.optim import lr_scheduler


def fresh(opt_cls=SGD, **kw):
    model = nn.Linear(2, 1)
    with torch.no_grad():
        model.weight.fill_(0.5)
        model.bias.fill_(-0.1)
    return model, opt_cls(model.parameters(), lr=0.1, **kw)


def train_step(model, opt):
    x = torch.tensor([[1.0, 2.0], [3.0, -1.0]])
    loss = (model(x) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def run(name, make, epochs=8, metric=None):
    model, opt = fresh(**make.get("opt", {}))
    sched = make["sched"](opt)
    lrs = []
    for epoch in range(epochs):
        train_step(model, opt)
        if metric is not None:
            sched.step(metric[epoch])
        else:
            sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    print("RESULT", name, *[f"{v:.7g}" for v in lrs])
    return model, opt, sched


run("step", {"sched": lambda o: lr_scheduler.StepLR(o, step_size=3, gamma=0.5)})
run("multistep", {"sched": lambda o: lr_scheduler.MultiStepLR(o, milestones=[2, 5], gamma=0.1)})
run("exponential", {"sched": lambda o: lr_scheduler.ExponentialLR(o, gamma=0.9)})
run("cosine", {"sched": lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=6, eta_min=0.01)})
run("warm_restarts", {"sched": lambda o: lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2)})
run("lambda", {"sched": lambda o: lr_scheduler.LambdaLR(o, lr_lambda=lambda epoch: 0.95 ** epoch)})
run("multiplicative", {"sched": lambda o: lr_scheduler.MultiplicativeLR(o, lr_lambda=lambda e: 0.9)})
run("linear", {"sched": lambda o: lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=4)})
run("constant", {"sched": lambda o: lr_scheduler.ConstantLR(o, factor=0.5, total_iters=3)})
run("polynomial", {"sched": lambda o: lr_scheduler.PolynomialLR(o, total_iters=6, power=2.0)})
run("sequential", {"sched": lambda o: lr_scheduler.SequentialLR(
    o, schedulers=[lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=3),
                   lr_scheduler.CosineAnnealingLR(o, T_max=5)], milestones=[3])})
run("chained", {"sched": lambda o: lr_scheduler.ChainedScheduler(
    [lr_scheduler.ConstantLR(o, factor=0.5, total_iters=2), lr_scheduler.ExponentialLR(o, gamma=0.9)])})
run("onecycle", {"sched": lambda o: lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=10)}, epochs=10)
run("cyclic", {"sched": lambda o: lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2)}, epochs=8)
_, opt, plateau = run("plateau", {"sched": lambda o: lr_scheduler.ReduceLROnPlateau(o, mode="min", factor=0.5,
                                                                                     patience=1)},
                      metric=[1.0, 0.9, 0.95, 0.96, 0.97, 0.5, 0.6, 0.7])
print("RESULT plateau_state", plateau.num_bad_epochs, f"{plateau.best:.7g}")

model, opt = fresh(Adam)
sched = lr_scheduler.StepLR(opt, step_size=2, gamma=0.3)
losses = []
for epoch in range(3):
    losses.append(train_step(model, opt))
    sched.step()
state = sched.state_dict()
print("RESULT state_keys", *sorted(k for k in state if not k.startswith("_")))
print("RESULT state_epoch", state["last_epoch"], f"{state['_last_lr'][0]:.7g}")
sched2 = lr_scheduler.StepLR(opt, step_size=5, gamma=0.9)
sched2.load_state_dict(state)
sched2.step()
print("RESULT resumed", sched2.last_epoch, f"{sched2.get_last_lr()[0]:.7g}", f"{opt.param_groups[0]['lr']:.7g}")
print("RESULT adam_losses", *[f"{v:.7g}" for v in losses])
