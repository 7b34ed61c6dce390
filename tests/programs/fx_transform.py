"""torch.fx recipes: symbolic_trace a module, inspect the graph (op/target/args), replace
torch.add with torch.mul by rewriting nodes, insert a relu after every linear (call_module) node,
delete dead code, recompile, and check the GraphModule against eager execution."""
import operator

import torch
import torch.fx
import torch.nn as nn
from torch.fx import symbolic_trace


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.param = nn.Parameter(torch.linspace(-1.0, 1.0, 4))

    def forward(self, x):
        y = torch.add(x, self.param)
        z = self.linear(y)
        unused = z * 3  # noqa: F841  (dead code for eliminate_dead_code)
        return torch.add(z, x).clamp(min=0.0, max=1.5) + x.sum(dim=-1, keepdim=True)


def describe(gm):
    for node in gm.graph.nodes:
        target = node.target
        if callable(target):
            target = getattr(target, "__name__", str(target))
        print("RESULT node", node.op, node.name, target, len(node.args), len(node.users))


torch.manual_seed(0)
m = M()
with torch.no_grad():
    m.linear.weight.copy_(torch.arange(16, dtype=torch.float32).view(4, 4) / 20 - 0.4)
    m.linear.bias.copy_(torch.tensor([0.1, -0.2, 0.3, 0.0]))
x = torch.linspace(-2, 2, 8).view(2, 4)

gm = symbolic_trace(m)
describe(gm)
print("RESULT traced_matches", int(torch.allclose(gm(x), m(x))))

# 1. replace torch.add by torch.mul
for node in gm.graph.nodes:
    if node.op == "call_function" and node.target == torch.add:
        node.target = torch.mul
gm.graph.lint()
gm.recompile()
ref = (m.linear(x * m.param) * x).clamp(min=0.0, max=1.5) + x.sum(dim=-1, keepdim=True)
print("RESULT mul_matches", int(torch.allclose(gm(x), ref)))

# 2. a relu after every call_module node
graph = gm.graph
for node in list(graph.nodes):
    if node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.Linear):
        with graph.inserting_after(node):
            new_node = graph.call_function(torch.relu, args=(node,))
            node.replace_all_uses_with(new_node)
            new_node.args = (node,)
removed = graph.eliminate_dead_code()
print("RESULT dce_removed", int(bool(removed)))
gm.recompile()
describe(gm)
out = gm(x)
print("RESULT out", *[f"{v:.6g}" for v in out.flatten().tolist()])
print("RESULT has_relu", int("relu" in gm.code))
n_ops = sum(1 for n in gm.graph.nodes if n.op == "call_function" and n.target in (operator.add, operator.mul))
print("RESULT operator_nodes", n_ops)
