"""Random bits: the Threefry-2x32 counter-based hash, ember's only source of randomness.

``threefry2x32(key1, key2, x1, x2) -> (y1, y2)`` encrypts the counter words
(x1, x2) under the key words (key1, key2) with 20 rounds of Threefry-2x32
(Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3", SC 2011; the
Random123 library's ``threefry2x32_20``). All four operands are uint32 and
broadcast like NumPy (keys are usually scalars, counters arrays); both results
have the broadcast shape. Being a pure function of its inputs, it gives the
same bits on every backend, under vmap and under jit. `ember.random` builds
keys, splitting and every distribution on it.

Not differentiable (integer in, integer out). Transform rules join with the
transforms: batching is elementwise (move the batch dims to the front and
broadcast), jit needs nothing special.
"""

from __future__ import annotations

from ember.core import dtypes
from ember.core.abstract import ShapedArray, describe
from ember.core.primitive import Primitive
from ember.core.primitives._rules import broadcast_shapes
from ember.errors import DTypeError

threefry2x32_p = Primitive("threefry2x32", multiple_results=True)

_OPERANDS = ("key1", "key2", "x1", "x2")


def _threefry2x32_rule(key1: ShapedArray, key2: ShapedArray, x1: ShapedArray, x2: ShapedArray) -> list[ShapedArray]:
    avals = (key1, key2, x1, x2)
    for name, aval in zip(_OPERANDS, avals):
        if aval.dtype != dtypes.uint32:
            shown = ", ".join(f"{n}={describe(a)}" for n, a in zip(_OPERANDS, avals))
            raise DTypeError(
                f"threefry2x32: every operand must be uint32, but {name} is {describe(aval)} ({shown}); "
                "convert with lax.convert_element_type(x, 'uint32'), or use ember.random, which makes keys for you"
            )
    shape = broadcast_shapes("threefry2x32", *(a.shape for a in avals))
    out = ShapedArray(shape, dtypes.uint32, False)
    return [out, out]


threefry2x32_p.abstract_eval = _threefry2x32_rule

# --- batching rule ------------------------------------------------------------------------------
# Elementwise over its four operands, which broadcast like NumPy's: batched operands get their batch
# axis first, unbatched ones (usually the key words, or shared counters) stay as they are.

from ember.core.batching import defbroadcasting

defbroadcasting(threefry2x32_p)
