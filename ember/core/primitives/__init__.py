"""The primitive set, one module per family; importing this registers them all."""

from ember.core.primitives import (  # noqa: F401  (imported for registration)
    bitwise,
    contraction,
    elementwise,
    reduction,
    special,
    structural,
)
