"""ember.scipy: SciPy's names over ember arrays (as `jax.scipy`).

>>> import ember.numpy as enp, ember.scipy.special as esp
>>> esp.logsumexp(enp.zeros(2)).item()  # log(2)
0.6931471...
"""

from ember.scipy import linalg, special

__all__ = ["linalg", "special"]
