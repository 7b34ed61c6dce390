"""REINFORCE (the classic policy-gradient example) on a tiny corridor environment written in numpy:
Policy with Categorical(probs), select_action/finish_episode with normalised discounted returns.
Sampled actions come from torch's generator, so the live-rollout numbers are RANDOM; the deterministic
part (log-probs, entropy, the loss and gradients of a fixed episode) is compared."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

gamma = 0.99
eps = np.finfo(np.float32).eps.item()


class Corridor:
    """Walk left/right on 0..5; reward 1 at the right end, -0.01 per step; 20 steps at most."""

    def __init__(self):
        self.pos = 0
        self.t = 0

    def reset(self):
        self.pos, self.t = 2, 0
        return self._obs()

    def _obs(self):
        obs = np.zeros(6, dtype=np.float32)
        obs[self.pos] = 1.0
        return obs

    def step(self, action):
        self.pos = min(5, max(0, self.pos + (1 if action == 1 else -1)))
        self.t += 1
        done = self.pos == 5 or self.t >= 20
        reward = 1.0 if self.pos == 5 else -0.01
        return self._obs(), reward, done


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(6, 16)
        self.affine2 = nn.Linear(16, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)


torch.manual_seed(543)
policy = Policy()
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(policy.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    policy.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))
optimizer = optim.Adam(policy.parameters(), lr=1e-2)


def select_action(state):
    state = torch.from_numpy(state).float().unsqueeze(0)
    probs = policy(state)
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item()


def finish_episode():
    R = 0
    policy_loss = []
    returns = []
    for r in policy.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for log_prob, R in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    optimizer.zero_grad()
    policy_loss = torch.cat(policy_loss).sum()
    policy_loss.backward()
    grad_norm = torch.norm(torch.stack([p.grad.norm() for p in policy.parameters()]))
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]
    return policy_loss.item(), grad_norm.item()


# deterministic: a fixed episode replayed through the policy
env = Corridor()
state = env.reset()
for action in [1, 0, 1, 1, 1, 1]:
    probs = policy(torch.from_numpy(state).unsqueeze(0))
    m = Categorical(probs=probs)
    a = torch.tensor([action])
    policy.saved_log_probs.append(m.log_prob(a))
    print(f"RESULT fixed_logp {m.log_prob(a).item():.7g} {m.entropy().item():.7g}")
    state, reward, done = env.step(action)
    policy.rewards.append(reward)
loss, gnorm = finish_episode()
print(f"RESULT fixed_episode {loss:.7g} {gnorm:.7g}")

d = Categorical(logits=torch.tensor([[0.5, -1.0, 2.0], [0.0, 0.0, 0.0]]))
print("RESULT cat_probs", *[f"{v:.7g}" for v in d.probs.flatten().tolist()])
print("RESULT cat_entropy", *[f"{v:.7g}" for v in d.entropy().tolist()])
print("RESULT cat_logp", *[f"{v:.7g}" for v in d.log_prob(torch.tensor([2, 1])).tolist()])
print("RESULT cat_sample_shape", *d.sample((5,)).shape)

running_reward = 0.0
for i_episode in range(1, 6):
    state, ep_reward = env.reset(), 0
    for t in range(1, 21):
        action = select_action(state)
        state, reward, done = env.step(action)
        policy.rewards.append(reward)
        ep_reward += reward
        if done:
            break
    running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
    loss, gnorm = finish_episode()
    print(f"RANDOM episode{i_episode} {t} {ep_reward:.7g} {loss:.7g}")
print("RESULT buffers_cleared", len(policy.rewards), len(policy.saved_log_probs))
