"""Building fx graphs by hand: a Graph driven through Proxy objects and a GraphAppendingTracer (the
'write a transformation with Proxies' recipe), a decomposition pass that re-emits each call through
proxies, and graphs whose call_function targets are torch.ops.aten overloads."""
import torch
import torch.fx
import torch.nn.functional as F
from torch.fx import Graph, GraphModule, Proxy
from torch.fx.proxy import GraphAppendingTracer


def show(tag, values):
    print("RESULT", tag, *[f"{v:.6g}" for v in values.flatten().tolist()])


# 1. a graph written through proxies
graph = Graph()
tracer = GraphAppendingTracer(graph)
x = Proxy(graph.placeholder("x"), tracer)
w = Proxy(graph.placeholder("w"), tracer)
y = torch.relu(x @ w) + 1
z = y.sum(dim=1) * torch.sigmoid(x.mean())
graph.output(z.node)
gm = GraphModule(torch.nn.Module(), graph)
print("RESULT proxy_ops", *[n.op for n in gm.graph.nodes])
xs = torch.linspace(-1, 2, 6).view(2, 3)
ws = torch.linspace(0.5, -0.25, 12).view(3, 4)
show("proxy_out", gm(xs, ws))
show("proxy_ref", (torch.relu(xs @ ws) + 1).sum(dim=1) * torch.sigmoid(xs.mean()))

# 2. decomposition: F.gelu-free MLP whose relu nodes get rewritten as (x > 0) * x via proxies
decomposition_rules = {}


def relu_decomposition(x):
    return (x > 0) * x


decomposition_rules[F.relu] = relu_decomposition


def decompose(model: torch.nn.Module, tracer_class: type = torch.fx.Tracer) -> torch.nn.Module:
    graph: torch.fx.Graph = tracer_class().trace(model)
    new_graph = torch.fx.Graph()
    env = {}
    tracer = torch.fx.proxy.GraphAppendingTracer(new_graph)
    for node in graph.nodes:
        if node.op == "call_function" and node.target in decomposition_rules:
            proxy_args = [torch.fx.Proxy(env[x.name], tracer) if isinstance(x, torch.fx.Node) else x
                          for x in node.args]
            output_proxy = decomposition_rules[node.target](*proxy_args)
            new_node = output_proxy.node
            env[node.name] = new_node
        else:
            new_node = new_graph.node_copy(node, lambda x: env[x.name])
            env[node.name] = new_node
    return torch.fx.GraphModule(model, new_graph)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 3)

    def forward(self, x):
        return F.relu(self.fc(x)) - F.relu(-x)


mlp = MLP()
with torch.no_grad():
    mlp.fc.weight.copy_(torch.tensor([[0.5, -1.0, 0.25], [1.0, 0.0, -0.5], [-0.3, 0.2, 0.1]]))
    mlp.fc.bias.fill_(0.1)
dec = decompose(mlp)
targets = [getattr(n.target, "__name__", str(n.target)) for n in dec.graph.nodes if n.op == "call_function"]
print("RESULT decomposed_targets", *targets)
show("decomposed_out", dec(xs))
show("eager_out", mlp(xs))

# 3. torch.ops.aten targets
g = Graph()
a = g.placeholder("a")
b = g.placeholder("b")
mm = g.call_function(torch.ops.aten.mm.default, (a, b))
r = g.call_function(torch.ops.aten.relu.default, (mm,))
s = g.call_function(torch.ops.aten.sum.dim_IntList, (r, [1]))
g.output(s)
aten_gm = GraphModule({}, g)
show("aten_out", aten_gm(xs, ws))
print("RESULT aten_targets", *[str(n.target) for n in g.nodes if n.op == "call_function"])
print("RESULT aten_packet", torch.ops.aten.relu.default.overloadpacket.__name__)
