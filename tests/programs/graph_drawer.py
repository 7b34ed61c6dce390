"""A torchviz-style autograd graph drawer: walk grad_fn/next_functions from the output, name nodes by
their class, label AccumulateGrad leaves by parameter name through .variable, and list each node's
saved attributes (the `_saved_` prefix) as make_dot(show_attrs=True) does. Prints a DOT-like
listing: nodes, edges and saved attributes, in a canonical order."""
import torch
import torch.nn as nn
from torch.autograd import Variable

SAVED_PREFIX = "_saved_"


def get_fn_name(fn, show_attrs, max_attr_chars):
    name = str(type(fn).__name__)
    if not show_attrs:
        return name
    attrs = dict()
    for attr in dir(fn):
        if not attr.startswith(SAVED_PREFIX):
            continue
        val = getattr(fn, attr)
        attr = attr[len(SAVED_PREFIX):]
        if torch.is_tensor(val):
            attrs[attr] = "[saved tensor " + "x".join(str(s) for s in val.shape) + "]"
        elif isinstance(val, tuple) and any(torch.is_tensor(t) for t in val):
            attrs[attr] = "[saved tensors]"
        else:
            attrs[attr] = str(val)
    if not attrs:
        return name
    max_attr_chars = max(max_attr_chars, 3)
    col1width = max(len(k) for k in attrs.keys())
    col2width = min(max(len(str(v)) for v in attrs.values()), max_attr_chars)
    sep = "-" * max(col1width + col2width + 2, len(name))
    attrstr = "%-" + str(col1width) + "s: %" + str(col2width) + "s"

    def truncate(s):
        return s[:col2width - 3] + "..." if len(s) > col2width else s

    params = "\n".join(attrstr % (k, truncate(str(v))) for (k, v) in sorted(attrs.items()))
    return name + "\n" + sep + "\n" + params


def make_dot(var, params=None, show_attrs=False, max_attr_chars=50):
    if params is not None:
        assert all(isinstance(p, Variable) for p in params.values())
        param_map = {id(v): k for k, v in params.items()}
    else:
        param_map = {}
    nodes, edges = {}, []
    seen = set()

    def size_to_str(size):
        return "(" + ", ".join(["%d" % v for v in size]) + ")"

    def get_var_name(var, name=None):
        if not name:
            name = param_map[id(var)] if id(var) in param_map else ""
        return "%s\n %s" % (name, size_to_str(var.size()))

    def add_nodes(fn):
        assert not torch.is_tensor(fn)
        if fn in seen:
            return
        seen.add(fn)
        if show_attrs:
            for attr in dir(fn):
                if not attr.startswith(SAVED_PREFIX):
                    continue
                val = getattr(fn, attr)
                attr = attr[len(SAVED_PREFIX):]
                if torch.is_tensor(val):
                    nodes[str(id(val))] = ("saved", get_var_name(val, attr))
                    edges.append((str(id(fn)), str(id(val)), "saved"))
        if hasattr(fn, "variable"):
            var = fn.variable
            seen.add(var)
            nodes[str(id(var))] = ("param", get_var_name(var))
            edges.append((str(id(var)), str(id(fn)), "acc"))
        nodes[str(id(fn))] = ("fn", get_fn_name(fn, show_attrs, max_attr_chars))
        if hasattr(fn, "next_functions"):
            for u in fn.next_functions:
                if u[0] is not None:
                    edges.append((str(id(u[0])), str(id(fn)), "next"))
                    add_nodes(u[0])

    def add_base_tensor(var):
        if var in seen:
            return
        seen.add(var)
        nodes[str(id(var))] = ("out", get_var_name(var))
        if var.grad_fn:
            add_nodes(var.grad_fn)
            edges.append((str(id(var.grad_fn)), str(id(var)), "out"))

    add_base_tensor(var)
    return nodes, edges


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.fc2 = nn.Linear(4, 2)

    def forward(self, x):
        return torch.tanh(self.fc2(torch.relu(self.fc1(x)))).pow(2).mean()


model = Net()
x = torch.linspace(-1, 1, 6).view(2, 3).requires_grad_()
y = model(x)
nodes, edges = make_dot(y, params=dict(model.named_parameters()), show_attrs=True)

# canonical listing: label each node by (kind, label), independent of ids and traversal order; a function
# node by its class name (the first line of its label), its saved tensors appear as "saved" nodes
label = {k: (kind, text.split("\n")[0] if kind == "fn" else text.replace("\n", " | ")) for k, (kind, text) in nodes.items()}
for kind, text in sorted(label.values()):
    print("RESULT node", kind, text.replace(" ", "_"))
for a, b, how in sorted((label[a][1].split(" | ")[0], label[b][1].split(" | ")[0], how) for a, b, how in edges):
    print("RESULT edge", a.replace(" ", "_"), b.replace(" ", "_"), how)
print("RESULT counts", len(nodes), len(edges))

fn = y.grad_fn
print("RESULT root", type(fn).__name__, fn.name())
print("RESULT root_next", *[type(f).__name__ for f, _ in fn.next_functions])
pow_fn = fn.next_functions[0][0]
print("RESULT pow_saved_exponent", pow_fn._saved_exponent)
print("RESULT pow_saved_self_is_tanh_out", int(torch.equal(pow_fn._saved_self, torch.tanh(model.fc2(torch.relu(model.fc1(x)))))))
acc = [f for f, _ in pow_fn.next_functions[0][0].next_functions[0][0].next_functions if f is not None]
print("RESULT addmm_inputs", *sorted(type(f).__name__ for f in acc))
