"""Module full backward hooks (torch.nn.Module.register_full_backward_hook / _pre_hook).

A module call with backward hooks passes its positional tensor inputs, and then its tensor outputs,
through an identity autograd.Function (`BackwardHookFunction`). The node on the outputs sees
grad_output first: it runs the pre-hooks (which may replace grad_output) and remembers grad_output.
The node on the inputs runs when the gradients have gone through the whole module: it hands
grad_input and the remembered grad_output to the hooks (which may replace grad_input). When no input
requires grad there is no input node, and the hooks fire from the output node with grad_input all
None, as torch does.
"""

import warnings

from ... import _C
from ...autograd.function import Function
from ..._C import is_grad_enabled

_VIEW_MODIFIED = (
    "Output {} of BackwardHookFunction is a view and is being modified inplace. This view was created inside "
    "a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace "
    "would override the custom backward associated with the custom Function, leading to incorrect gradients. "
    "This behavior is forbidden. You can fix this by cloning the output of the custom Function."
)


class BackwardHookFunction(Function):
    """Identity on its tensor arguments; its node is where the module's backward hooks attach."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


def _pack(indices, values, size):
    """Values at the tensor positions of a `size`-long argument tuple, None elsewhere."""
    out = [None] * size
    for i, v in zip(indices, values):
        out[i] = v
    return tuple(out)


class BackwardHook:
    """The backward hooks of one module call: set up on its inputs, then on its outputs."""

    def __init__(self, module, hooks, pre_hooks):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = -1
        self.input_index = self.output_index = None
        self._inputs = ()  # (position, tensor, version) of wrapped inputs, checked after forward
        self._outputs = ()  # the same for outputs, checked when backward reaches them

    def _wrap(self, args, register):
        """Pass the tensors among args through BackwardHookFunction and attach `register` to its node;
        args unchanged (and None for the indices) when nothing requires grad."""
        index = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
        tensors = [args[i] for i in index]
        if not (is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return args, None
        wrapped = BackwardHookFunction.apply(*tensors)
        # an input that does not require grad stays out of the graph (its alias is detached)
        wrapped = [w if t.requires_grad else w.detach() for t, w in zip(tensors, wrapped)]
        node = next(w.grad_fn for w in wrapped if w.grad_fn is not None)
        register(node)
        out = list(args)
        for i, w in zip(index, wrapped):
            out[i] = w
        return tuple(out), index

    def _versions(self, wrapped, index):
        return tuple((k, wrapped[i].detach(), wrapped[i]._version) for k, i in enumerate(index)
                     if wrapped[i].requires_grad)

    def setup_input_hook(self, args):
        args, self.input_index = self._wrap(args, lambda node: node.register_hook(self._input_hook))
        self.n_inputs = len(args)
        if self.input_index is not None:
            self._inputs = self._versions(args, self.input_index)
        return args

    def check_inputs(self):
        """Inputs modified in place by forward: torch forbids it (the error comes after forward here)."""
        for k, t, version in self._inputs:
            if t._version != version:
                raise RuntimeError(_VIEW_MODIFIED.format(k))
        self._inputs = ()

    def setup_output_hook(self, result):
        is_tuple = isinstance(result, tuple)
        outs = result if is_tuple else (result,)
        outs, self.output_index = self._wrap(outs, lambda node: node.register_hook(self._output_hook))
        self.n_outputs = len(outs)
        if self.output_index is not None:
            self._outputs = self._versions(outs, self.output_index)
        return outs if is_tuple else outs[0]

    def _output_hook(self, _grad_inputs, grad_outputs):
        for k, t, version in self._outputs:
            if t._version != version:
                raise RuntimeError(_VIEW_MODIFIED.format(k))
        self._outputs = ()
        self.grad_outputs = _pack(self.output_index, grad_outputs, self.n_outputs)
        for hook in self.pre_hooks:
            res = hook(self.module, self.grad_outputs)
            if res is None:
                continue
            if len(res) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                   f"got {len(res)}, but expected {len(self.grad_outputs)}")
            self.grad_outputs = res
        grad_outputs = self.grad_outputs
        if self.input_index is None:
            # no input requires grad: the hooks fire now, with grad_input all None
            if self.hooks:
                warnings.warn(
                    "Full backward hook is firing when gradients are computed with respect to module outputs since "
                    "no inputs require gradients. See https://docs.pytorch.org/docs/main/generated/torch.nn.Module."
                    "html#torch.nn.Module.register_full_backward_hook for more details.", stacklevel=2)
                grad_inputs = (None,) * self.n_inputs
                for hook in self.hooks:
                    res = hook(self.module, grad_inputs, self.grad_outputs)
                    if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                        raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                           "always return None or None for all gradients.")
            self.grad_outputs = None
        return tuple(grad_outputs[i] for i in self.output_index)

    def _input_hook(self, grad_inputs, _grad_outputs):
        if self.grad_outputs is None:
            # the gradient reached the inputs without going through the outputs (double backward)
            return None
        res = _pack(self.input_index, grad_inputs, self.n_inputs)
        for hook in self.hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(res)}")
            res = out
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_index)
