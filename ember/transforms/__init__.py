"""Function transforms: forward and reverse mode autodiff (vmap, jit and the rest follow)."""

from ember.transforms.autodiff import grad, jvp, linear_transpose, linearize, value_and_grad, vjp

__all__ = ["grad", "jvp", "linear_transpose", "linearize", "value_and_grad", "vjp"]
