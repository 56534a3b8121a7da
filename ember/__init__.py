"""ember: composable function transforms for NumPy-style arrays, in the style of JAX.

>>> import ember, ember.numpy as enp
>>> (enp.arange(3.0) * 2).tolist()
[0.0, 2.0, 4.0]
"""

from ember import (
    debug,
    dim,
    distributed,
    errors,
    lax,
    nn,
    numpy,
    optim,
    privacy,
    random,
    scipy,
    test_util,
    tree,
)
from ember.config import config
from ember.core import primitives as _primitives
from ember.core.array import Array, Device
from ember.core.transfer import default_device, device_put, devices
from ember.distributed import shard_map
from ember.io import load, load_bytes, save, save_bytes
from ember.transforms import (
    ShapeDtypeStruct,
    checkpoint,
    checkpoint_policies,
    custom_jvp,
    custom_vjp,
    disable_jit,
    eval_shape,
    grad,
    hessian,
    jacfwd,
    jacobian,
    jacrev,
    jit,
    jvp,
    linear_transpose,
    linearize,
    make_ir,
    pure_callback,
    remat,
    value_and_grad,
    vjp,
    vmap,
)

__version__ = "0.1.0"


# The public functions are boundaries: an error leaving one has ember's own frames dropped from its
# traceback (ember/_traceback.py; EMBER_TRACEBACK_FILTERING=off shows them). Done once here, after every
# namespace is imported; ember's modules call the plain functions among themselves.
def _install_boundaries() -> None:
    import sys

    from ember import _traceback

    for name in ("ember", "ember.numpy", "ember.numpy.linalg", "ember.numpy.fft", "ember.lax", "ember.lax.linalg",
                 "ember.scipy.special", "ember.scipy.linalg", "ember.random", "ember.tree", "ember.nn", "ember.nn.functional",
                 "ember.nn.init", "ember.optim", "ember.io", "ember.dim", "ember.distributed",
                 "ember.privacy"):  # fmt: skip
        if name in sys.modules:
            _traceback.wrap_namespace(sys.modules[name])


_install_boundaries()

__all__ = ["Array", "Device", "ShapeDtypeStruct", "__version__", "checkpoint", "checkpoint_policies", "config",
           "custom_jvp", "custom_vjp", "debug", "devices", "dim", "disable_jit", "distributed", "errors", "eval_shape", "grad", "hessian",
           "jacfwd", "jacobian", "jacrev", "jit", "jvp", "lax", "linear_transpose", "linearize", "load", "load_bytes", "make_ir",
           "nn", "numpy", "optim", "privacy", "pure_callback", "remat", "save", "save_bytes", "scipy", "shard_map", "test_util", "tree", "value_and_grad", "vjp", "vmap"]  # fmt: skip
