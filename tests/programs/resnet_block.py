"""ResNet BasicBlocks with BatchNorm (torchvision's structure, scaled down): conv3x3/conv1x1 helpers,
downsample shortcut, kaiming_normal_ init by module type, zero-init of the last BN gamma, SGD with
nesterov momentum and weight decay, train/eval modes and the running statistics."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class TinyResNet(nn.Module):
    def __init__(self, num_classes=5, zero_init_residual=True):
        super().__init__()
        self.inplanes = 8
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = self._make_layer(8, 1)
        self.layer2 = self._make_layer(16, 1, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, BasicBlock) and m.bn2.weight is not None:
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes, stride), nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        for _ in range(1, blocks):
            layers.append(BasicBlock(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


torch.manual_seed(0)
model = TinyResNet()
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(model.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    model.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))
print("RESULT n_params", sum(p.numel() for p in model.parameters() if p.requires_grad))
print("RESULT n_buffers", len(list(model.buffers())), sum(b.numel() for b in model.buffers()))
print("RESULT zero_gamma", int(model.layer1[0].bn2.weight.abs().sum().item() == 0))

rng = np.random.default_rng(0)
images = torch.from_numpy(rng.standard_normal((12, 3, 8, 8)).astype(np.float32))
labels = torch.from_numpy(rng.integers(0, 5, size=12))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

model.train()
for step in range(5):
    optimizer.zero_grad()
    outputs = model(images)
    loss = criterion(outputs, labels)
    loss.backward()
    optimizer.step()
    acc = (outputs.argmax(1) == labels).float().mean()
    print(f"RESULT step{step} {loss.item():.7g} {acc.item():.7g} {model.conv1.weight.grad.norm().item():.7g}")

bn = model.layer2[0].downsample[1]
print("RESULT bn_running_mean", *[f"{v:.6g}" for v in bn.running_mean[:4].tolist()])
print("RESULT bn_running_var", *[f"{v:.6g}" for v in bn.running_var[:4].tolist()])
print("RESULT bn_tracked", int(bn.num_batches_tracked.item()))
model.eval()
with torch.no_grad():
    out = model(images[:3])
    print("RESULT eval_logits", *[f"{v:.6g}" for v in out.flatten().tolist()])
    print("RESULT eval_probs_sum", *[f"{v:.6g}" for v in F.softmax(out, 1).sum(1).tolist()])
