"""A torch.fx Tracer subclass: keeps a user module as a leaf (is_leaf_module), torch.fx.wrap for a free
function, concrete_args, then an Interpreter subclass that records the shape flowing out of every node
(the ShapeProp recipe) and counts the calls."""
import torch
import torch.fx
import torch.nn as nn


def scaled_softsign(x, scale: float):
    return scale * x / (1 + x.abs())


torch.fx.wrap("scaled_softsign")


class Gate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent control flow: only traceable as a leaf
            return x * 2
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 6)
        self.gate = Gate()
        self.norm = nn.LayerNorm(6)

    def forward(self, x, use_norm=True):
        h = self.gate(self.proj(x))
        if use_norm:
            h = self.norm(h)
        return scaled_softsign(h, 0.5).flatten(1)


class GateLeafTracer(torch.fx.Tracer):
    def is_leaf_module(self, m, module_qualified_name):
        return isinstance(m, Gate) or super().is_leaf_module(m, module_qualified_name)


class ShapeRecorder(torch.fx.Interpreter):
    def __init__(self, module):
        super().__init__(module)
        self.calls = 0
        self.shapes = {}

    def run_node(self, n):
        result = super().run_node(n)
        self.calls += 1
        if isinstance(result, torch.Tensor):
            self.shapes[n.name] = tuple(result.shape)
        return result


net = Net()
with torch.no_grad():
    for i, p in enumerate(net.parameters()):
        p.copy_(torch.linspace(-0.5, 0.5, p.numel()).view_as(p) * (1 + i))

tracer = GateLeafTracer()
graph = tracer.trace(net, concrete_args={"use_norm": True})
gm = torch.fx.GraphModule(tracer.root, graph, "Net")
print("RESULT class_name", type(gm).__name__ == "Net" or gm.__class__.__name__)
for node in gm.graph.nodes:
    target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "?")
    print("RESULT node", node.op, target)

x = torch.linspace(-1, 1, 12).view(3, 4)
out = gm(x)
print("RESULT matches_eager", int(torch.allclose(out, net(x, use_norm=True))))
print("RESULT out", *[f"{v:.6g}" for v in out[0].tolist()])
interp = ShapeRecorder(gm)
res = interp.run(x)
print("RESULT interp_calls", interp.calls)
for name, shape in sorted(interp.shapes.items()):
    print("RESULT shape", name, *shape)
print("RESULT interp_matches", int(torch.allclose(res, out)))
print("RESULT leaf_kept", int(any(n.op == "call_module" and n.target == "gate" for n in gm.graph.nodes)))
