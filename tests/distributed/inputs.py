"""What tests/distributed/worker.py computes on, shared with tests/test_distributed.py so that the test
can rebuild every rank's operands and compute the references in one process."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import ember
from ember import lax

AXIS = "processes"
DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
          "uint64", "complex64", "complex128", "bool")  # fmt: skip


def shapes(n: int) -> list[tuple[int, ...]]:
    return [(), (n,), (2 * n, 3), (0, 3)]


def key(dtype: str, shape: tuple[int, ...]) -> str:
    return f"{dtype}_{'x'.join(map(str, shape)) or 'scalar'}"


def np_dtype(dtype: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)


def value(rank: int, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """Rank `rank`'s operand: small multiples of 1/2 for floats (sums exact in any order, even in
    bfloat16), negatives and wrap-around for integers."""
    size = int(np.prod(shape))
    base = (np.arange(size) * 5 + rank * 3) % 7 - 3
    if dtype == "bool":
        out = (np.arange(size) + rank) % 3 == 0
    elif dtype in ("int8", "int16"):
        out = base * {"int8": 40, "int16": 12000}[dtype]  # sums of a few wrap around
    elif dtype.startswith("uint"):
        out = (base + 3) * {"uint8": 60, "uint16": 20000}.get(dtype, 1000) + rank
    elif dtype.startswith("int"):
        out = base * 1000 + rank
    elif dtype.startswith("complex"):
        out = base * 0.5 + 1j * (rank - base * 0.25)
    else:
        out = base * 0.5 + rank * 0.25
    return np.asarray(out).astype(np_dtype(dtype)).reshape(shape)


def storable(key: str, value: np.ndarray) -> tuple[str, np.ndarray]:
    """An npz entry for a result (npz loses bfloat16: stored as its bits, marked)."""
    key = key.replace("/", "|")
    if value.dtype == np_dtype("bfloat16"):
        return "bf16:" + key, value.view(np.uint16)
    return key, value


def loaded(key: str, value: np.ndarray) -> tuple[str, np.ndarray]:
    if key.startswith("bf16:"):
        key, value = key[5:], value.view(np_dtype("bfloat16"))
    return key.replace("|", "/"), value


def perms(n: int) -> dict[str, tuple[tuple[int, int], ...]]:
    return {"ring": tuple((i, (i + 1) % n) for i in range(n)), "one": ((0, n - 1),)}


def training_setup(dtype: str = "float32"):
    """(params, x, y, steps, learning rate): the demo MLP and 64 digits with one-hot labels, in `dtype`
    (float64 needs ember's enable_x64)."""
    from ember import demo

    images, labels = demo.load_digits()
    x = ember.numpy.asarray(images[:64].astype(dtype))
    y = ember.numpy.asarray(np.eye(10, dtype=dtype)[labels[:64]])
    params = ember.tree.map(lambda p: p.astype(dtype), demo.make_model(ember.random.key(0)))
    return params, x, y, 5, 0.01


def mean_loss(params, x, y):
    from ember import demo

    return ember.vmap(demo.loss, in_axes=(None, 0, 0))(params, x, y).mean()


def mean_loss_pmean(params, x, y):
    return lax.pmean(mean_loss(params, x, y), AXIS)


def mean_loss_and_grads_pmean(params, x, y):
    loss, grads = ember.value_and_grad(mean_loss)(params, x, y)
    return lax.pmean((loss, grads), AXIS)
