"""Function transforms: forward and reverse mode autodiff, custom rules, rematerialization, vmap (jit and
the rest follow)."""

from ember.transforms.autodiff import grad, jvp, linear_transpose, linearize, value_and_grad, vjp
from ember.transforms.custom import custom_jvp, custom_vjp
from ember.transforms.remat import checkpoint, checkpoint_policies, remat
from ember.transforms.vmap import vmap

__all__ = ["checkpoint", "checkpoint_policies", "custom_jvp", "custom_vjp", "grad", "jvp", "linear_transpose",
           "linearize", "remat", "value_and_grad", "vjp", "vmap"]  # fmt: skip
