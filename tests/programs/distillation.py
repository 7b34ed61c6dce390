"""Knowledge distillation: a frozen teacher in eval mode under torch.no_grad, a student trained on
alpha * T^2 * KL(log_softmax(student/T) || softmax(teacher/T)) (kl_div with reduction='batchmean') plus
(1 - alpha) * cross-entropy, and a cosine-similarity hidden-state loss (CosineEmbeddingLoss)."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Teacher(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU())
        self.classifier = nn.Linear(16, 4)

    def forward(self, x):
        h = self.features(x)
        return self.classifier(h), h


class Student(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.classifier = nn.Linear(16, 4)

    def forward(self, x):
        h = self.features(x)
        return self.classifier(h), h


torch.manual_seed(0)
teacher, student = Teacher(), Student()
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save({"teacher": teacher.state_dict(), "student": student.state_dict()}, os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    init = torch.load(os.environ["PROGRAM_LOAD_INIT"])
    teacher.load_state_dict(init["teacher"])
    student.load_state_dict(init["student"])

rng = np.random.default_rng(0)
X = torch.from_numpy(rng.normal(size=(48, 8)).astype(np.float32))
y = torch.from_numpy((X[:, 0] > 0).long().numpy() + 2 * (X[:, 1] > 0).long().numpy())

T, alpha = 2.0, 0.7
teacher.eval()
optimizer = torch.optim.Adam(student.parameters(), lr=5e-3)
cosine_loss = nn.CosineEmbeddingLoss()
for epoch in range(6):
    student.train()
    with torch.no_grad():
        teacher_logits, teacher_hidden = teacher(X)
    student_logits, student_hidden = student(X)
    soft_targets = F.softmax(teacher_logits / T, dim=-1)
    soft_prob = F.log_softmax(student_logits / T, dim=-1)
    kd = F.kl_div(soft_prob, soft_targets, reduction="batchmean") * T ** 2
    ce = F.cross_entropy(student_logits, y)
    hidden = cosine_loss(student_hidden, teacher_hidden, torch.ones(X.size(0)))
    loss = alpha * kd + (1 - alpha) * ce + 0.1 * hidden
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"RESULT epoch{epoch} {loss.item():.6g} {kd.item():.6g} {ce.item():.6g} {hidden.item():.6g}")

print("RESULT teacher_no_grad", int(all(p.grad is None for p in teacher.parameters())))
kl_manual = (soft_targets * (soft_targets.log() - soft_prob)).sum(-1).mean()
print("RESULT kl_matches_manual", int(torch.allclose(kl_manual * T ** 2, kd, atol=1e-6)))
print("RESULT kl_log_target", f"{F.kl_div(soft_prob, soft_targets.log(), reduction='sum', log_target=True).item():.6g}")
