"""Function transforms: forward and reverse mode autodiff, custom rules, rematerialization, vmap, dense
Jacobians and Hessians, jit."""

from ember.transforms.autodiff import grad, jvp, linear_transpose, linearize, value_and_grad, vjp
from ember.transforms.callback import pure_callback
from ember.transforms.custom import custom_jvp, custom_vjp
from ember.transforms.jacobians import hessian, jacfwd, jacobian, jacrev
from ember.transforms.jit import ShapeDtypeStruct, disable_jit, eval_shape, jit, make_ir
from ember.transforms.remat import checkpoint, checkpoint_policies, remat
from ember.transforms.vmap import vmap

__all__ = ["ShapeDtypeStruct", "checkpoint", "checkpoint_policies", "custom_jvp", "custom_vjp", "disable_jit",
           "eval_shape", "grad", "hessian", "jacfwd", "jacobian", "jacrev", "jit", "jvp", "linear_transpose",
           "linearize", "make_ir", "pure_callback", "remat", "value_and_grad", "vjp", "vmap"]  # fmt: skip
