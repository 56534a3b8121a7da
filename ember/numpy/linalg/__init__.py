"""ember.numpy.linalg: NumPy's linear algebra over ember arrays, differentiable and batchable."""

from ember.numpy.linalg._factor import *
from ember.numpy.linalg._spectral import *
