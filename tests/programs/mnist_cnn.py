"""The classic MNIST example, on synthetic 'digits': argparse, accelerator detection, DataLoader over a
TensorDataset, Adadelta with StepLR, train/test loops with nll_loss, and saving/resuming model,
optimizer and scheduler state."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.fc1 = nn.Linear(16 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print(f"RESULT train_epoch{epoch}_batch{batch_idx} {loss.item():.7g}")


def test(model, device, test_loader, tag):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    print(f"RESULT {tag} {test_loss:.7g} {correct} {len(test_loader.dataset)}")
    return test_loss


def synthetic_digits(n, rng):
    """12x12 images: digit k lights up a k-dependent pattern of pixels, plus noise."""
    labels = rng.integers(0, 10, size=n)
    images = rng.normal(0.0, 0.3, size=(n, 1, 12, 12)).astype(np.float32)
    for i, k in enumerate(labels):
        images[i, 0, k, :] += 1.0
        images[i, 0, :, (3 * k) % 12] += 1.0
    images = (images - 0.1307) / 0.3081
    return torch.from_numpy(images), torch.from_numpy(labels.astype(np.int64))


def main():
    parser = argparse.ArgumentParser(description="PyTorch MNIST Example")
    parser.add_argument("--batch-size", type=int, default=48, metavar="N")
    parser.add_argument("--test-batch-size", type=int, default=100, metavar="N")
    parser.add_argument("--epochs", type=int, default=3, metavar="N")
    parser.add_argument("--lr", type=float, default=1.0, metavar="LR")
    parser.add_argument("--gamma", type=float, default=0.7, metavar="M")
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--no-accel", action="store_true", help="disables accelerator")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--seed", type=int, default=1, metavar="S")
    parser.add_argument("--log-interval", type=int, default=1, metavar="N")
    parser.add_argument("--save-model", action="store_true", default=True)
    args = parser.parse_args()

    use_accel = not args.no_accel and torch.accelerator.is_available()
    torch.manual_seed(args.seed)
    if use_accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")
    device = torch.device("cpu")  # the corpus compares CPU numbers
    print("RESULT cuda_flag_type", type(torch.cuda.is_available()).__name__)
    print("RESULT device", device.type)

    train_kwargs = {"batch_size": args.batch_size}
    test_kwargs = {"batch_size": args.test_batch_size}
    if use_accel:
        accel_kwargs = {"num_workers": 1, "persistent_workers": True, "pin_memory": True, "shuffle": True}
        train_kwargs.update(accel_kwargs)
        test_kwargs.update(accel_kwargs)

    rng = np.random.default_rng(args.seed)
    dataset1 = TensorDataset(*synthetic_digits(96, rng))
    dataset2 = TensorDataset(*synthetic_digits(40, rng))
    train_loader = DataLoader(dataset1, **train_kwargs)
    test_loader = DataLoader(dataset2, **test_kwargs)
    print("RESULT loader_lengths", len(train_loader), len(test_loader))

    model = Net(args.dropout).to(device)
    if os.environ.get("PROGRAM_SAVE_INIT"):
        torch.save(model.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
    if os.environ.get("PROGRAM_LOAD_INIT"):
        model.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader, f"test_epoch{epoch}")
        scheduler.step()
        print(f"RESULT lr_epoch{epoch} {scheduler.get_last_lr()[0]:.7g}")
        if epoch == 2 and args.save_model:
            torch.save({"epoch": epoch, "model_state_dict": model.state_dict(),
                        "optimizer_state_dict": optimizer.state_dict(),
                        "scheduler_state_dict": scheduler.state_dict()}, "mnist_cnn_ckpt.pt")
    if args.save_model:
        torch.save(model.state_dict(), "mnist_cnn.pt")

    # a fresh process would do this: rebuild, load, evaluate, resume training for the last epoch
    restored = Net(args.dropout)
    restored.load_state_dict(torch.load("mnist_cnn.pt", weights_only=True))
    test(restored, device, test_loader, "restored")
    checkpoint = torch.load("mnist_cnn_ckpt.pt")
    resumed = Net(args.dropout)
    resumed.load_state_dict(checkpoint["model_state_dict"])
    opt2 = optim.Adadelta(resumed.parameters(), lr=args.lr)
    opt2.load_state_dict(checkpoint["optimizer_state_dict"])
    sched2 = StepLR(opt2, step_size=1, gamma=args.gamma)
    sched2.load_state_dict(checkpoint["scheduler_state_dict"])
    print(f"RESULT resumed_lr {sched2.get_last_lr()[0]:.7g} {checkpoint['epoch']}")
    for epoch in range(checkpoint["epoch"] + 1, args.epochs + 1):
        train(args, resumed, device, train_loader, opt2, epoch)
        sched2.step()
    test(resumed, device, test_loader, "resumed")


if __name__ == "__main__":
    main()
