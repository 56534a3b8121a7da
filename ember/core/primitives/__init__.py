"""The primitive set, one module per family; importing this registers them all."""

from ember.core.primitives import (
    bitwise,
    collective,
    collective_exchange,
    contraction,
    conv,
    eigen,
    elementwise,
    fft,
    indexing,
    linalg,
    random,
    reduction,
    sorting,
    special,
    structural,
)
