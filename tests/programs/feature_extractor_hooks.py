"""Module hooks as feature-extraction and debugging code uses them: register_forward_hook collecting
activations by module name, a forward pre-hook that rescales the input, register_full_backward_hook
recording grad_output norms, named_modules/named_children/named_buffers walks, freezing a backbone with
requires_grad_(False) and fine-tuning only the head."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.AdaptiveAvgPool2d(2)

    def forward(self, x):
        return self.pool(F.relu(self.bn(self.conv(x))))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Backbone()
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 3))

    def forward(self, x):
        return self.head(self.backbone(x))


torch.manual_seed(0)
net = Net()
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(net.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    net.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))

print("RESULT modules", *[name or "<root>" for name, _ in net.named_modules()])
print("RESULT children", *[name for name, _ in net.named_children()])
print("RESULT buffers", *[name for name, _ in net.named_buffers()])

activations = {}


def save_activation(name):
    def hook(module, inputs, output):
        activations[name] = output.detach()
    return hook


handles = [m.register_forward_hook(save_activation(n)) for n, m in net.named_modules()
           if isinstance(m, (nn.Conv2d, nn.Linear, nn.AdaptiveAvgPool2d))]
pre = net.head.register_forward_pre_hook(lambda module, args: (args[0] * 2.0,))
grad_norms = []
bh = net.head[1].register_full_backward_hook(lambda m, gin, gout: grad_norms.append(gout[0].norm().item()))

x = torch.linspace(-1, 1, 2 * 2 * 5 * 5).view(2, 2, 5, 5)
out = net(x)
out.sum().backward()
for name in sorted(activations):
    a = activations[name]
    print("RESULT act", name, *a.shape, f"{a.abs().mean().item():.6g}")
print("RESULT backward_hook", len(grad_norms), *[f"{v:.6g}" for v in grad_norms])
for h in handles + [pre, bh]:
    h.remove()
activations.clear()
net(x)
print("RESULT after_remove", len(activations))

# freeze the backbone, fine-tune the head
net.backbone.requires_grad_(False)
net.backbone.eval()
trainable = [p for p in net.parameters() if p.requires_grad]
print("RESULT trainable", len(trainable), sum(p.numel() for p in trainable))
opt = torch.optim.SGD(trainable, lr=0.1)
before = net.backbone.conv.weight.clone()
target = torch.tensor([0, 2])
for step in range(4):
    opt.zero_grad()
    loss = F.cross_entropy(net(x), target)
    loss.backward()
    opt.step()
    print(f"RESULT finetune{step} {loss.item():.7g}")
print("RESULT backbone_unchanged", int(torch.equal(before, net.backbone.conv.weight)),
      int(net.backbone.conv.weight.grad is None))
