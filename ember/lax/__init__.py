"""ember.lax: the primitive-level namespace (one function per primitive, no promotion).

Names and semantics follow ``jax.lax``. Operands must share a dtype; Python
scalars adopt it. `ember.numpy` builds NumPy's conveniences on top. Structured
control flow (`cond switch while_loop fori_loop scan map`) lives in
`ember.lax.control_flow`.
"""

from ember.lax._conv import (
    ConvDimensionNumbers,
    conv,
    conv_dimension_numbers,
    conv_general_dilated,
    conv_transpose,
    conv_with_general_padding,
    reduce_window,
)
from ember.lax._elementwise import *
from ember.lax._elementwise import __all__ as _elementwise_all
from ember.lax._fft import FftType, fft
from ember.lax._indexing import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
    gather,
    index_in_dim,
    scatter,
    scatter_add,
    scatter_max,
    scatter_min,
    scatter_mul,
)
from ember.lax._parallel import all_gather, axis_index, pmax, pmean, pmin, psum
from ember.lax._parallel import all_to_all, ppermute, pshuffle, psum_scatter, reduce_scatter
from ember.lax._sorting import *
from ember.lax._sorting import __all__ as _sorting_all
from ember.lax._structural import (
    argmax,
    argmin,
    broadcast,
    broadcast_in_dim,
    broadcasted_iota,
    concatenate,
    dot,
    dot_general,
    expand_dims,
    full,
    iota,
    pad,
    reduce_and,
    reduce_max,
    reduce_min,
    reduce_or,
    reduce_prod,
    reduce_sum,
    reshape,
    rev,
    slice,
    slice_in_dim,
    squeeze,
    transpose,
)
from ember.lax.control_flow import cond, fori_loop, map, scan, switch, while_loop
from ember.lax import linalg

__all__ = [*_elementwise_all, *_sorting_all, "argmax", "argmin", "broadcast", "broadcast_in_dim", "broadcasted_iota",
           "concatenate", "dot", "dot_general", "expand_dims", "full", "iota", "pad", "reduce_and", "reduce_max",
           "reduce_min", "reduce_or", "reduce_prod", "reduce_sum", "reshape", "rev", "slice", "slice_in_dim",
           "squeeze", "transpose", "GatherDimensionNumbers", "GatherScatterMode", "ScatterDimensionNumbers",
           "dynamic_index_in_dim", "dynamic_slice", "dynamic_slice_in_dim", "dynamic_update_index_in_dim",
           "dynamic_update_slice", "dynamic_update_slice_in_dim", "gather", "index_in_dim", "scatter", "scatter_add",
           "scatter_max", "scatter_min", "scatter_mul", "ConvDimensionNumbers", "conv", "conv_dimension_numbers",
           "conv_general_dilated", "conv_transpose", "conv_with_general_padding", "reduce_window", "all_gather",
           "axis_index", "pmax", "pmean", "pmin", "psum", "all_to_all", "ppermute", "pshuffle", "psum_scatter",
           "reduce_scatter", "FftType", "fft", "cond", "fori_loop", "map", "scan", "switch",
           "while_loop"]  # fmt: skip
