"""ember.numpy: a NumPy-compatible namespace written with ember primitives.

Also the Python array API namespace (standard 2024.12) of ember arrays (``x.__array_namespace__()``);
where the standard and NumPy disagree, ember follows NumPy, as JAX does: the list of differences is
the docstring of ``ember.numpy._array_api``. Promotion follows JAX's lattice; 64-bit types need
``ember.config`` x64.
"""

from ember.numpy import _methods, fft, linalg
from ember.numpy._array_api import (
    __array_api_version__,
    __array_namespace_info__,
    astype,
    count_nonzero,
    cumulative_prod,
    cumulative_sum,
    from_dlpack,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
    unstack,
)
from ember.numpy._contract import dot, einsum, inner, kron, matmul, matvec, outer, tensordot, vdot, vecdot, vecmat
from ember.numpy._core import asarray
from ember.numpy._creation import (
    arange,
    array,
    copy,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    geomspace,
    identity,
    linspace,
    logspace,
    meshgrid,
    ones,
    ones_like,
    tri,
    tril,
    triu,
    zeros,
    zeros_like,
)
from ember.numpy._dtypes import *
from ember.numpy._dtypes import can_cast, finfo, iinfo, isdtype, issubdtype, promote_types, result_type
from ember.numpy._math import *
from ember.numpy._rounding import *
from ember.numpy._rounding import round
from ember.numpy._index_tricks import *
from ember.numpy._polynomial import *
from ember.numpy._statistics import *
from ember.numpy._ndarray_extras import choose, compress, ptp
from ember.numpy._reductions import (
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    max,
    mean,
    min,
    nanmean,
    nansum,
    prod,
    std,
    sum,
    var,
)
from ember.numpy._shape import (
    array_split,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_arrays,
    broadcast_shapes,
    broadcast_to,
    column_stack,
    concat,
    concatenate,
    dsplit,
    dstack,
    expand_dims,
    hsplit,
    hstack,
    matrix_transpose,
    moveaxis,
    ndim,
    pad,
    permute_dims,
    ravel,
    reshape,
    shape,
    size,
    split,
    squeeze,
    stack,
    swapaxes,
    transpose,
    vsplit,
    vstack,
)
from ember.numpy._sorting import *
from ember.numpy._take import (
    argwhere,
    diagonal,
    flatnonzero,
    flip,
    fliplr,
    flipud,
    nonzero,
    put_along_axis,
    repeat,
    roll,
    take,
    take_along_axis,
    tile,
    trace,
)
from ember.numpy._ufuncs import *
from ember.numpy._ufuncs import abs, divmod, pow

_methods.install()
del _methods
