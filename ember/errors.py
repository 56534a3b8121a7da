"""ember's exceptions.

Every exception ember raises derives from :class:`EmberError`. Where NumPy
would raise a ``TypeError`` or ``ValueError`` for the same mistake, ember's
exception subclasses that built-in as well, so ``except TypeError`` keeps
working for code ported from NumPy.

Messages are written for the person reading them: they name the operation,
the shapes and dtypes involved, and what to do instead. Their tracebacks show
the user's code, not ember's: ember's frames are dropped at its public functions
(``ember/_traceback.py``; ``EMBER_TRACEBACK_FILTERING=off`` keeps them).
"""

from __future__ import annotations

__all__ = [
    "ArgumentTypeError",
    "CheckpointError",
    "ConcretizationError",
    "DTypeError",
    "DeletedArrayError",
    "DeviceError",
    "DeviceMemoryError",
    "DistributedError",
    "EmberError",
    "EmberIndexError",
    "EmberOverflowError",
    "ImmutableArrayError",
    "InvalidArgumentError",
    "MemoryBudgetError",
    "NaNError",
    "ShapeError",
    "TracerLeakError",
    "TransformError",
    "UnboundAxisNameError",
]


class EmberError(Exception):
    """Base class of every exception raised by ember."""


class ShapeError(EmberError, ValueError):
    """Operands have shapes an operation cannot accept (a ``ValueError``)."""


class DTypeError(EmberError, TypeError):
    """Operands have dtypes an operation cannot accept (a ``TypeError``)."""


class EmberOverflowError(EmberError, OverflowError):
    """A Python integer does not fit the dtype it must be converted to."""


class EmberIndexError(EmberError, IndexError):
    """An index is out of bounds for the array's shape, or is not a valid index (an ``IndexError``,
    as in NumPy). ``x.at[idx].get(mode="clip")`` or ``mode="fill"`` reads out-of-bounds positions
    without raising."""


class ImmutableArrayError(EmberError, TypeError):
    """Item assignment on an ember array (``x[idx] = y``), which is immutable: write
    ``x = x.at[idx].set(y)`` instead (a ``TypeError``, as for any object without item assignment)."""


class ConcretizationError(EmberError, TypeError):
    """A traced value was used where a concrete Python value is needed."""


class TracerLeakError(EmberError, RuntimeError):
    """A tracer escaped the transform that created it and was used later."""


class InvalidArgumentError(EmberError, ValueError):
    """An argument has an invalid value (an axis out of range, a bad spec)."""


class ArgumentTypeError(EmberError, TypeError):
    """A non-array argument has the wrong Python type (a string where a shape or a number belongs)."""


class TransformError(EmberError, TypeError):
    """A transform cannot be applied to a function as written: forward-mode autodiff of a
    ``custom_vjp`` function, or a custom rule whose outputs do not match the function's."""


class UnboundAxisNameError(EmberError, NameError):
    """A collective (``lax.psum``, ``lax.axis_index``, ...) names an axis that no enclosing
    ``vmap(..., axis_name=...)`` binds (a ``NameError``, as in JAX)."""


class NaNError(EmberError, FloatingPointError):
    """With ``ember.config.update("debug_nans", True)``: a primitive produced a NaN from operands without
    one (a ``FloatingPointError``, as in JAX)."""


class DeletedArrayError(EmberError, RuntimeError):
    """An array was used after it was donated to a jitted function (``jit(f, donate_argnums=...)``),
    which may have written its results into the array's buffer (a ``RuntimeError``, as in JAX)."""


class CheckpointError(EmberError, ValueError):
    """A checkpoint file cannot be read or written as asked: truncated, corrupt or crafted, naming an unknown
    type, or not matching the structure it is loaded into (a ``ValueError``). Loading never runs code from the file."""


class DeviceError(EmberError, ValueError):
    """An array is on the wrong device for what was asked: operands of one operation committed to two
    devices, a device that is not present (or no longer is), a platform whose backend is missing (CuPy not
    installed: the message gives the install command; no GPU found), or GPU memory handed to a function that
    runs on the host (a ``ValueError``, as JAX's for incompatible devices). Nothing is copied between
    committed devices behind the user's back: ``ember.device_put(x, device)`` moves an array."""


class DeviceMemoryError(EmberError, MemoryError):
    """A GPU ran out of memory: the message names the operation, its operands' shapes and dtypes and the
    bytes asked for, and how to need less (``chunk_size=`` on vmap / jacrev / jacfwd, a smaller batch,
    deleting arrays no longer used). A ``MemoryError``."""


class MemoryBudgetError(EmberError, MemoryError):
    """``chunk_size="auto"`` cannot fit the computation into ``ember.config.memory_budget``: even one example
    at a time needs more. The message gives the estimated peak of one example and the budget, and what to do
    (raise the budget, a smaller problem). A ``MemoryError``."""


class DistributedError(EmberError, RuntimeError):
    """Processes disagree or cannot meet: a collective whose operands differ in shape or dtype across ranks
    (each rank's named), ranks that did not reach a collective within ``ember.config.collective_timeout``
    (named), ``ember.distributed.initialize`` called twice, or no MPI to run on. A ``RuntimeError``."""
