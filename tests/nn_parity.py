"""Helpers for the PyTorch parity tests of ember.nn: copy a torch module's weights into the ember module of
the same architecture by name (which also checks that the names agree), and compare results."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import nn
from ember.nn._tree import replace_named


def to_numpy(t: Any) -> np.ndarray:
    """A torch tensor (or anything array-like) as a NumPy array, detached."""
    if hasattr(t, "detach"):
        t = t.detach()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        return t.cpu().numpy()
    return np.asarray(t)


def copy_weights(model: nn.Module, torch_module: Any, state: nn.State | None = None):
    """``model`` with every parameter set to the torch module's value of the same name; with ``state``,
    also ``(model, state)`` with the torch module's buffers (running statistics) copied in.

    The names must agree exactly: PyTorch's ``named_parameters`` and ember's."""
    torch_params = {name: to_numpy(p) for name, p in torch_module.named_parameters()}
    ours = [name for name, _ in model.named_parameters()]
    assert sorted(ours) == sorted(torch_params), f"parameter names differ: ember {ours}, torch {sorted(torch_params)}"
    model = replace_named(model, torch_params, "copy_weights")
    if state is None:
        return model
    buffers = {name: to_numpy(b) for name, b in torch_module.named_buffers()}
    ours_b = dict(state.named_buffers())
    assert sorted(ours_b) == sorted(buffers), f"buffer names differ: ember {sorted(ours_b)}, torch {sorted(buffers)}"
    from ember import tree
    import ember.numpy as enp

    leaves_with_path = tree.leaves_with_path(state)
    flat_names = [name for name, _ in state.named_buffers()]
    assert len(leaves_with_path) == len(flat_names)
    by_name = {}
    for key in state.keys():
        entry = state._values[key]
        if isinstance(entry, dict):
            by_name[key] = {b: enp.asarray(buffers[f"{key}.{b}" if key else b]).astype(v.dtype) for b, v in entry.items()}
        else:
            by_name[key] = enp.asarray(buffers[key]).astype(entry.dtype)
    return model, nn.State(by_name)


def assert_close(ours: Any, theirs: Any, rtol: float = 1e-5, atol: float = 1e-5, what: str = "") -> None:
    """ember's result (any array) against torch's (a tensor), in float32 tolerance by default."""
    np.testing.assert_allclose(np.asarray(ours, dtype=np.float64), to_numpy(theirs).astype(np.float64),
                               rtol=rtol, atol=atol, err_msg=what)
