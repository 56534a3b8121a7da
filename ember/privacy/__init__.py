"""Differentially private training (DP-SGD): per-example gradient norms and clipping without
materialising every per-example gradient, Gaussian noise, and an RDP accountant.

For a per-example loss ``loss(params, *example)`` and a ``batch`` tuple of arrays batched along axis 0:
`per_example_norms(loss)(params, batch)` is the norm of each example's gradient, and
`clipped_grad(loss, max_norm)(params, batch)` the sum over examples of each gradient scaled by
``min(1, max_norm / norm)``. Parameters that enter the loss through a matrix product, a convolution
or an embedding lookup get their norms by the "ghost norm" identity from the traced program; others
fall back to materialised per-example gradients (of those parameters only).
"""

from ember.privacy._accounting import *
from ember.privacy._ghost import *
