"""op_db entries for the non-elementwise `ember.numpy` functions and `ember.scipy.special`.

Creation, reductions, shape ops, contractions and `pad`, each against NumPy
(or SciPy), with result dtypes by JAX's rules: sums of bool and small integers
accumulate in the default integer, means and variances of integers are in the
default float, and so on. The default dtypes depend on x64, which the runner
turns on for the 64-bit dtypes; `default_float(d)` / `default_int(d)` say what
they are while `d` is tested.
"""

from __future__ import annotations

import numpy as np
import scipy.special as sc
from op_db import (
    ALL,
    BF16,
    BOOL,
    FLOATING,
    INTEGER,
    NO_COMPLEX,
    NUMERIC,
    REAL,
    SUM_TOLERANCES,
    UNSIGNED,
    OpInfo,
    Sample,
    binary_samples,
    canonical,
    default_float,
    default_int,
    is_inexact_dtype,
    make_array,
    register,
    same,
    sum_dtype,
    to_float,
    to_real,
    unary_samples,
    upcast,
    with_specials,
)

import ember.numpy as enp
import ember.scipy.special as esp

F16 = np.dtype(np.float16)
NOT_COUNTABLE = "bool cannot count: arange needs a numeric dtype (as lax.iota)"
REAL_ONLY = "a real special function: complex arguments are not supported (as in jax.scipy.special)"


def _kwarg_dtype_or(default):
    """out_dtype_of: the sample's dtype= keyword (canonical), else `default(d)`."""

    def rule(d, s):
        given = s.kwargs.get("dtype")
        return canonical(given, d) if given is not None else default(d)

    return rule


def _mean_dtype(d):
    return d if is_inexact_dtype(d) else default_float(d)


def _var_dtype(d):
    return to_real(d) if is_inexact_dtype(d) else default_float(d)


def _cases(*cases, low=None, high=None):
    """Samples from (shapes, extra_args, kwargs) triples: arrays of the tested dtype, then static args."""

    def make(rng, d):
        out = []
        for shapes, extra, kwargs in cases:
            arrays = [make_array(rng, s, d, low, high) for s in shapes]
            out.append(Sample((*arrays, *extra), dict(kwargs)))
        return out

    return make


def _list_cases(*cases, low=None, high=None):
    """Samples whose first argument is a list of arrays (concatenate, stack, ...); a shape written
    ("bool", shape) makes a bool array instead, to check promotion."""

    def make(rng, d):
        out = []
        for shapes, extra, kwargs in cases:
            arrays = [make_array(rng, s[1], np.bool_) if s and s[0] == "bool" else make_array(rng, s, d, low, high)
                      for s in shapes]  # fmt: skip
            out.append(Sample((arrays, *extra), dict(kwargs)))
        return out

    return make


def _c(shapes, *extra, **kwargs):
    """One case for `_cases` / `_list_cases`."""
    return (shapes, extra, kwargs)


# --- creation ----------------------------------------------------------------------------------------


def _shape_dtype_samples(rng, d):
    return [Sample(((2, 3), d)), Sample((4, d)), Sample(((), d)), Sample(((0, 3), d)), Sample(((2, 1, 2),))]


def _given_or_default_float(d, s):
    given = s.kwargs.get("dtype", s.args[1] if len(s.args) > 1 else None)
    return canonical(given, d) if given is not None else default_float(d)


def _array_samples(rng, d):
    x = make_array(rng, (2, 3), d)
    return [Sample((x,)), Sample((make_array(rng, (), d),)), Sample((make_array(rng, (0, 2), d),)),
            Sample((x.tolist(),), {"dtype": d}), Sample((make_array(rng, (3,), d),), {"ndmin": 3}),
            Sample((x,), {"dtype": d}), Sample((make_array(rng, (2,), np.bool_),), {"dtype": d})]  # fmt: skip


def _like_samples(rng, d):
    x = make_array(rng, (2, 3), d)
    return [Sample((x,)), Sample((make_array(rng, (), d),)), Sample((make_array(rng, (0, 4), d),)),
            Sample((x,), {"shape": (3, 1)}), Sample((x,), {"dtype": np.int8}), Sample((x,), {"dtype": np.float32})]  # fmt: skip


def _full_samples(rng, d):
    return [Sample(((2, 3), make_array(rng, (), d))), Sample(((0,), make_array(rng, (), d))),
            Sample(((2, 3), make_array(rng, (3,), d))), Sample((4, 1, d)), Sample(((), make_array(rng, (), d), d))]  # fmt: skip


def _full_like_samples(rng, d):
    x = make_array(rng, (2, 3), d)
    return [Sample((x, make_array(rng, (), d))), Sample((x, 1)), Sample((x, make_array(rng, (3,), d))),
            Sample((make_array(rng, (0,), d), 1)), Sample((x, 2), {"shape": (4,)}), Sample((x, 1), {"dtype": np.int16})]  # fmt: skip


def _eye_samples(rng, d):
    return [Sample((3,), {"dtype": d}), Sample((3, 4, 1), {"dtype": d}), Sample((2, 5, -1), {"dtype": d}),
            Sample((0,), {"dtype": d}), Sample((3, 3, 5), {"dtype": d}), Sample((2,))]  # fmt: skip


def _tri_samples(rng, d):
    return [Sample((3,), {"dtype": d}), Sample((3, 4, 1), {"dtype": d}), Sample((4, 2, -1), {"dtype": d}),
            Sample((0, 0), {"dtype": d}), Sample((3,))]  # fmt: skip


def _arange_samples(rng, d):
    out = [Sample((5,), {"dtype": d}), Sample((2, 9, 3), {"dtype": d}), Sample((0,), {"dtype": d}),
           Sample((6, 1, -2), {"dtype": d}), Sample((3, 3), {"dtype": d})]  # fmt: skip
    if is_inexact_dtype(d):
        out += [Sample((0.0, 2.0, 0.25), {"dtype": d}), Sample((-1.5, 1.0, 0.5), {"dtype": d})]
    if d in (np.dtype(np.int32), np.dtype(np.int64)):
        out += [Sample((7,)), Sample((-3, 4))]  # Python ints give the default integer
    if d in (np.dtype(np.float32), np.dtype(np.float64)):
        out += [Sample((0.5, 3.0, 0.5)), Sample((2.5,))]  # Python floats give the default float
    return out


def _arange_dtype(d, s):
    return canonical(s.kwargs["dtype"], d) if "dtype" in s.kwargs else d


def _arange_ref(*args, dtype=None):
    values = np.arange(*args)
    return values.astype(dtype) if dtype is not None else values


def _meshgrid_samples(rng, d):
    x, y, z = make_array(rng, (3,), d), make_array(rng, (2,), d), make_array(rng, (4,), d)
    return [Sample((x, y)), Sample((x, y), {"indexing": "ij"}), Sample((x, y, z)), Sample((x, y, z), {"indexing": "ij"}),
            Sample((x, y), {"sparse": True}), Sample((x,)), Sample((make_array(rng, (0,), d), y)),
            Sample((make_array(rng, (2, 2), d), make_array(rng, (), d)))]  # fmt: skip


def _space_endpoints(rng, d, low, high, shape=()):
    return np.asarray(make_array(rng, shape, d, low, high)), np.asarray(make_array(rng, shape, d, low, high))


def _linspace_samples(rng, d):
    a, b = _space_endpoints(rng, d, -5, 5)
    a2, b2 = _space_endpoints(rng, d, -5, 5, (2,))
    lo, hi = (0, 12) if d in UNSIGNED or d == np.bool_ else (-6, 6)
    out = [Sample((a, b, 7)), Sample((a, b, 4), {"endpoint": False}), Sample((a, b, 1)), Sample((a, b, 0)),
           Sample((a2, b2, 5)), Sample((a2, b, 3), {"axis": -1}), Sample((a2, b2, 4), {"axis": 1, "endpoint": False}),
           Sample((lo, hi, 9), {"dtype": d}), Sample((lo, hi, 5), {"dtype": d, "endpoint": False}),
           Sample((a, b, 1), {"endpoint": False})]  # fmt: skip
    if d == np.bool_:
        out.append(Sample((0, 1, 4), {"dtype": d}))
    if is_inexact_dtype(d):
        out.append(Sample((a, b, 6), {"retstep": True}))  # (values, step), both of the result dtype
        out.append(Sample((a2, b2, 5), {"retstep": True, "endpoint": False}))
        out += [Sample((a, b, 0), {"retstep": True}), Sample((a, b, 1), {"retstep": True}),
                Sample((a, b, 0), {"retstep": True, "endpoint": False}), Sample((a, b, 1), {"retstep": True, "endpoint": False})]
    return out


def _logspace_samples(rng, d):
    a, b = _space_endpoints(rng, d, -2, 2)
    a2, b2 = _space_endpoints(rng, d, -2, 2, (2,))
    out = [Sample((a, b, 5)), Sample((a, b, 4), {"endpoint": False}), Sample((a2, b2, 3), {"base": 2.0}),
           Sample((a, b, 0)), Sample((a, b, 1)), Sample((a2, b2, 4), {"axis": -1}),
           Sample((0, 6, 7), {"base": 2.0, "dtype": d}), Sample((0.0, 2.0, 3), {"dtype": d})]  # fmt: skip
    return out


def _geomspace_samples(rng, d):
    out = [Sample((2, 32, 2), {"dtype": d}), Sample((1, 1, 3), {"dtype": d})]
    if d != np.bool_ and d not in UNSIGNED:
        out.append(Sample((-4, -64, 2), {"dtype": d}))
    if is_inexact_dtype(d):
        a, b = np.asarray(make_array(rng, (), d, 0.5, 5)), np.asarray(make_array(rng, (), d, 0.5, 5))
        a2, b2 = make_array(rng, (2,), d, 0.5, 5), make_array(rng, (2,), d, 0.5, 5)
        out += [Sample((a, b, 5)), Sample((a, b, 4), {"endpoint": False}), Sample((-a, -b, 3)), Sample((a2, b2, 4)),
                Sample((a2, b, 3), {"axis": -1}), Sample((a, b, 0)), Sample((a, b, 1)), Sample((1.0, 1000.0, 4))]  # fmt: skip
    else:
        a, b = make_array(rng, (), d, 1, 9), make_array(rng, (), d, 1, 9)
        if d == np.bool_:
            a, b = np.array(True), np.array(True)
        out += [Sample((a, b, 5)), Sample((a, b, 3), {"endpoint": False})]  # promoted to the default float
    return out


def _geomspace_ref(*args, dtype=None, **kwargs):
    args = [upcast(np.asarray(a)) if isinstance(a, np.generic) else a for a in args]
    out = np.geomspace(*args, **kwargs)  # NumPy computes in float64 too, then casts; it cannot promote bfloat16
    return out if dtype is None else out.astype(dtype)


def _space_dtype(d, s):
    if "dtype" in s.kwargs:
        return canonical(s.kwargs["dtype"], d)
    arrays = [a for a in s.args[:2] if isinstance(a, (np.ndarray, np.generic))]
    if not arrays:
        return default_float(d)
    return d if is_inexact_dtype(d) else default_float(d)


def _triangle_samples(rng, d):
    return [Sample((make_array(rng, (3, 3), d),)), Sample((make_array(rng, (2, 4), d), 1)),
            Sample((make_array(rng, (4, 2), d), -1)), Sample((make_array(rng, (2, 3, 3), d),)),
            Sample((make_array(rng, (0, 0), d),)), Sample((make_array(rng, (3,), d),)),
            Sample((make_array(rng, (3, 3), d),), {"k": 5})]  # fmt: skip


register(
    OpInfo("enp.array", lambda x, **kw: enp.array(x, **kw), lambda x, **kw: np.array(x, **kw), ALL, _array_samples,
           out_dtype_of=_kwarg_dtype_or(same), ref_in_dtype=True),
    OpInfo("enp.asarray", lambda x, **kw: enp.asarray(x, **kw), lambda x, **kw: np.asarray(x, **kw), ALL,
           lambda rng, d: [s for s in _array_samples(rng, d) if "ndmin" not in s.kwargs],
           out_dtype_of=_kwarg_dtype_or(same), ref_in_dtype=True),
    OpInfo("enp.copy", enp.copy, np.copy, ALL, unary_samples(), primitives=("copy",), ref_in_dtype=True),
    OpInfo("enp.zeros", lambda s, dt=None: enp.zeros(s, dt), lambda s, dt=None: np.zeros(s, dt), ALL,
           _shape_dtype_samples, out_dtype_of=_given_or_default_float),
    OpInfo("enp.ones", lambda s, dt=None: enp.ones(s, dt), lambda s, dt=None: np.ones(s, dt), ALL,
           _shape_dtype_samples, out_dtype_of=_given_or_default_float),
    OpInfo("enp.empty", lambda s, dt=None: enp.empty(s, dt), lambda s, dt=None: np.zeros(s, dt), ALL,
           _shape_dtype_samples, out_dtype_of=_given_or_default_float),  # ember's empty is zero-filled
    OpInfo("enp.zeros_like", lambda x, **kw: enp.zeros_like(x, **kw), lambda x, **kw: np.zeros_like(x, **kw), ALL,
           _like_samples, out_dtype_of=_kwarg_dtype_or(same)),
    OpInfo("enp.ones_like", lambda x, **kw: enp.ones_like(x, **kw), lambda x, **kw: np.ones_like(x, **kw), ALL,
           _like_samples, out_dtype_of=_kwarg_dtype_or(same)),
    OpInfo("enp.empty_like", lambda x, **kw: enp.empty_like(x, **kw), lambda x, **kw: np.zeros_like(x, **kw), ALL,
           _like_samples, out_dtype_of=_kwarg_dtype_or(same)),
    OpInfo("enp.full", lambda *a: enp.full(*a), lambda s, v, dt=None: np.full(s, v, dt), ALL, _full_samples,
           ref_in_dtype=True),
    OpInfo("enp.full_like", lambda x, v, **kw: enp.full_like(x, v, **kw),
           lambda x, v, **kw: np.full_like(x, v, **kw), ALL, _full_like_samples, out_dtype_of=_kwarg_dtype_or(same),
           ref_in_dtype=True),
    OpInfo("enp.eye", lambda *a, **kw: enp.eye(*a, **kw), lambda *a, **kw: np.eye(*a, **kw), ALL, _eye_samples,
           out_dtype_of=_given_or_default_float),
    OpInfo("enp.identity", lambda n, **kw: enp.identity(n, **kw), lambda n, **kw: np.identity(n, **kw), ALL,
           lambda rng, d: [Sample((3,), {"dtype": d}), Sample((0,), {"dtype": d}), Sample((1,))],
           out_dtype_of=_given_or_default_float),
    OpInfo("enp.tri", lambda *a, **kw: enp.tri(*a, **kw), lambda *a, **kw: np.tri(*a, **kw), ALL, _tri_samples,
           out_dtype_of=_given_or_default_float),
    OpInfo("enp.tril", lambda m, k=0: enp.tril(m, k), lambda m, k=0: np.tril(m, k), ALL, _triangle_samples,
           ref_in_dtype=True),
    OpInfo("enp.triu", lambda m, k=0: enp.triu(m, k), lambda m, k=0: np.triu(m, k), ALL, _triangle_samples,
           ref_in_dtype=True),
    OpInfo("enp.meshgrid", lambda *xs, **kw: enp.meshgrid(*xs, **kw), lambda *xs, **kw: np.meshgrid(*xs, **kw), ALL,
           _meshgrid_samples, ref_in_dtype=True),
    OpInfo("enp.arange", lambda *a, **kw: enp.arange(*a, **kw), _arange_ref, NUMERIC, _arange_samples, NOT_COUNTABLE,
           out_dtype_of=_arange_dtype),
    OpInfo("enp.linspace", lambda *a, **kw: enp.linspace(*a, **kw), lambda *a, **kw: np.linspace(*a, **kw), ALL,
           _linspace_samples, out_dtype_of=_space_dtype, tol={F16: (4e-3, 4e-3), BF16: (2e-2, 4e-2)}),
    OpInfo("enp.logspace", lambda *a, **kw: enp.logspace(*a, **kw), lambda *a, **kw: np.logspace(*a, **kw), ALL,
           _logspace_samples, out_dtype_of=_space_dtype, tol={F16: (1e-2, 1e-2), BF16: (5e-2, 5e-2),
                                                             np.dtype(np.float32): (1e-5, 1e-6),
                                                             np.dtype(np.complex64): (1e-5, 1e-6)}),
    OpInfo("enp.geomspace", lambda *a, **kw: enp.geomspace(*a, **kw), _geomspace_ref, ALL,
           _geomspace_samples, out_dtype_of=_space_dtype, tol={F16: (1e-2, 1e-2), BF16: (5e-2, 5e-2),
                                                               np.dtype(np.float32): (1e-5, 1e-6),
                                                               np.dtype(np.complex64): (1e-5, 1e-6)}),
)  # fmt: skip


# --- reductions ----------------------------------------------------------------------------------------

_AXES = [((2, 3), None), ((2, 3), 0), ((2, 3), -1), ((2, 3), (0, 1)), ((4,), 0), ((), None), ((0, 3), 0),
         ((2, 0), 1), ((2, 3, 4), (0, 2)), ((2, 3, 4), (-1, 0)), ((0,), None)]  # fmt: skip


def _reduction_samples(low=None, high=None, nonempty=False, initial=None, dtypes=(), where=True, keepdims=True):
    """axis None/int/negative/tuple over 0-d, empty and 3-d shapes; keepdims; where= masks (full and broadcast);
    initial=; dtype= for each of `dtypes`."""

    def make(rng, d):
        out = []
        for shape, axis in _AXES:
            if nonempty and 0 in shape:
                if initial is None:
                    continue
                out.append(Sample((make_array(rng, shape, d, low, high),), {"axis": axis, "initial": initial}))
                continue
            out.append(Sample((make_array(rng, shape, d, low, high),), {"axis": axis}))
        x = make_array(rng, (2, 3), d, low, high)
        if keepdims:
            out += [Sample((x,), {"axis": 1, "keepdims": True}), Sample((x,), {"keepdims": True}),
                    Sample((make_array(rng, (2, 3, 4), d, low, high),), {"axis": (0, -1), "keepdims": True})]  # fmt: skip
        if where:
            mask = rng.random((2, 3)) < 0.6
            mask[:, 0] = True  # every row keeps an element: extrema and means stay defined
            extra = {} if initial is None else {"initial": initial}
            out += [Sample((x,), {"axis": 1, "where": mask, **extra}), Sample((x,), {"where": mask[0], **extra}),
                    Sample((x,), {"axis": 0, "where": mask, "keepdims": True, **extra})]  # fmt: skip
        if initial is not None:
            out += [Sample((x,), {"axis": 0, "initial": initial}), Sample((x,), {"initial": initial, "keepdims": True})]
        for t in dtypes:
            out.append(Sample((x,), {"axis": 0, "dtype": t}))
        return out

    return make


def _sum_like(name, np_fn, dtype_rule, samples, dtypes=ALL, unsupported="", tol=SUM_TOLERANCES, **kw):
    register(OpInfo(f"enp.{name}", lambda x, **k: getattr(enp, name)(x, **k), lambda x, **k: np_fn(x, **k), dtypes,
                    samples, unsupported, out_dtype_of=_kwarg_dtype_or(dtype_rule), tol=tol, **kw))  # fmt: skip


_sum_like("sum", np.sum, sum_dtype, _reduction_samples(initial=2, dtypes=(np.float32, np.int32)))
_sum_like("prod", np.prod, sum_dtype, _reduction_samples(-2, 3, initial=2, dtypes=(np.float32, np.int32)))
_sum_like("mean", np.mean, _mean_dtype, _reduction_samples(dtypes=(np.float32,)))
_sum_like("nansum", np.nansum, sum_dtype, with_specials(_reduction_samples(initial=1, dtypes=(np.float32,)),
                                                         values=(np.nan, 1.0, np.nan, -2.0)))  # fmt: skip
_sum_like("nanmean", np.nanmean, _mean_dtype, with_specials(_reduction_samples(), values=(np.nan, 1.0, np.nan, -2.0)))
_PLAIN_REDUCTION = _reduction_samples()


def _var_samples(rng, d):
    return _PLAIN_REDUCTION(rng, d) + [Sample((make_array(rng, (3, 4), d),), {"axis": 1, "ddof": 1}),
                                       Sample((make_array(rng, (5,), d),), {"ddof": 2, "keepdims": True})]  # fmt: skip


def _std_ad_samples(rng, d):
    # std = sqrt(var) has no derivative where var = 0 (e.g. over one element): spread-out samples only.
    return [Sample((make_array(rng, (3, 4), d),), {"axis": 1}), Sample((make_array(rng, (3, 4), d),), {"axis": 0, "ddof": 1}),
            Sample((make_array(rng, (5,), d),), {"keepdims": True})]  # fmt: skip


for _name, _fn in (("var", np.var), ("std", np.std)):
    _sum_like(_name, _fn, _var_dtype, _var_samples,
        tol={F16: (3e-2, 3e-2), BF16: (8e-2, 8e-2), np.dtype(np.float32): (1e-5, 1e-5),
             np.dtype(np.complex64): (1e-5, 1e-5)}, ad_samples=_std_ad_samples if _name == "std" else None)  # fmt: skip
for _name, _fn in (("max", np.max), ("min", np.min)):
    _sum_like(_name, _fn, same, with_specials(_reduction_samples(nonempty=True, initial=1), values=(1.0, np.nan, -np.inf)),
              REAL, NO_COMPLEX, tol={}, aliases=(f"a{_name}",), ref_in_dtype=True)  # fmt: skip
for _name, _fn in (("all", np.all), ("any", np.any)):
    _sum_like(_name, _fn, lambda d: np.dtype(np.bool_), _reduction_samples(-1, 2), ref_in_dtype=True)


def _arg_samples(rng, d):
    x = make_array(rng, (3, 4), d)
    return [Sample((x,)), Sample((x,), {"axis": 0}), Sample((x,), {"axis": -1}), Sample((x,), {"keepdims": True}),
            Sample((x,), {"axis": 1, "keepdims": True}), Sample((make_array(rng, (), d),)),
            Sample((make_array(rng, (5,), d),), {"axis": 0}), Sample((make_array(rng, (2, 3, 0), d),), {"axis": 1})]  # fmt: skip


for _name, _fn in (("argmax", np.argmax), ("argmin", np.argmin)):
    _sum_like(_name, _fn, default_int, with_specials(_arg_samples, values=(1.0, np.nan, -np.inf, np.nan)), REAL,
              NO_COMPLEX, tol={}, ref_in_dtype=True)  # fmt: skip


# --- shape ops -------------------------------------------------------------------------------------------


def _as(x, dtype):
    return x if dtype is None else x.astype(dtype)


def _shape_op(name, ref, samples, aliases=()):
    register(OpInfo(f"enp.{name}", lambda *a, **k: getattr(enp, name)(*a, **k), ref, ALL, samples, ref_in_dtype=True,
                    aliases=aliases, out_dtype_of=_kwarg_dtype_or(same)))  # fmt: skip


_shape_op("reshape", lambda x, s, **k: np.reshape(x, s, **k),
          _cases(_c([(2, 3)], (3, 2)), _c([(2, 3)], (-1,)), _c([(6,)], (2, -1)), _c([()], (1, 1)), _c([(0, 3)], (3, 0)),
                 _c([(2, 3)], (3, 2), order="F"), _c([(2, 3, 4)], 24), _c([(1,)], ()), _c([(0, 3)], (-1, 2))))
_shape_op("ravel", lambda x, **k: np.ravel(x, **k),
          _cases(_c([(2, 3)]), _c([()]), _c([(0, 2)]), _c([(2, 3, 2)], order="F")))
_TRANSPOSE = _cases(_c([(2, 3, 4)], (1, 0, 2)), _c([(2, 3, 4)], (-1, 0, 1)), _c([()], ()), _c([(0, 2)], (1, 0)),
                    _c([(3,)], (0,)))  # fmt: skip
_shape_op("transpose", lambda x, axes=None: np.transpose(x, axes),
          lambda rng, d: _TRANSPOSE(rng, d) + [Sample((make_array(rng, s, d),)) for s in ((2, 3, 4), (), (3,))])
_shape_op("permute_dims", lambda x, axes: np.permute_dims(x, axes), _TRANSPOSE)
_shape_op("matrix_transpose", lambda x: np.matrix_transpose(x), _cases(_c([(2, 3)]), _c([(4, 2, 3)]), _c([(0, 3)])))
_shape_op("swapaxes", np.swapaxes, _cases(_c([(2, 3, 4)], 0, 2), _c([(2, 3, 4)], -1, 0), _c([(3,)], 0, 0),
                                          _c([(0, 2)], 0, 1)))  # fmt: skip
_shape_op("moveaxis", np.moveaxis, _cases(_c([(2, 3, 4)], 0, -1), _c([(2, 3, 4)], [0, 1], [-1, -2]), _c([(3,)], 0, 0),
                                          _c([(2, 3, 4)], (2, 0), (0, 1)), _c([(0, 2)], 1, 0)))  # fmt: skip
_shape_op("expand_dims", np.expand_dims, _cases(_c([(3,)], 0), _c([(3,)], -1), _c([(2, 3)], (0, 3)), _c([()], 0),
                                                _c([(0,)], 1), _c([(2, 3)], (-1, 1))))  # fmt: skip
_shape_op("squeeze", lambda x, axis=None: np.squeeze(x, axis),
          _cases(_c([(1, 3, 1)]), _c([(1, 3, 1)], 0), _c([(1, 3, 1)], (0, -1)), _c([()]), _c([(0, 1)], 1), _c([(1,)])))
_shape_op("broadcast_to", np.broadcast_to, _cases(_c([(3,)], (2, 3)), _c([()], (2, 2)), _c([(2, 1)], (2, 4)),
                                                  _c([(1,)], (0,)), _c([(3,)], (3,)), _c([()], 3), _c([(1, 3)], (2, 0, 3))))
_shape_op("broadcast_arrays", np.broadcast_arrays,
          _cases(_c([(2, 1), (3,)]), _c([(), (2, 3)]), _c([(0, 3), (1, 3)]), _c([(4,)]), _c([(2, 1, 3), (4, 1), ()])))
for _n, _f in (("atleast_1d", np.atleast_1d), ("atleast_2d", np.atleast_2d), ("atleast_3d", np.atleast_3d)):
    _shape_op(_n, _f, _cases(_c([()]), _c([(3,)]), _c([(2, 3)]), _c([(1, 2, 3, 2)]), _c([(0,)]), _c([(), (3,), (2, 3)])))
_shape_op("concatenate", lambda xs, axis=0, dtype=None: _as(np.concatenate(xs, axis), dtype),
          _list_cases(_c([(2, 3), (1, 3), (0, 3)], 0), _c([(2, 1), (2, 2)], 1), _c([(2, 1), (2, 2)], -1),
                      _c([(2, 3), (4,)], None), _c([(3,)]), _c([(2, 3), ("bool", (1, 3))]), _c([(0,), (0,)]),
                      _c([(2, 2), (2, 2)], axis=1, dtype=np.float32)), aliases=("concat",))  # fmt: skip
_shape_op("stack", lambda xs, axis=0, dtype=None: _as(np.stack(xs, axis), dtype),
          _list_cases(_c([(2, 3)] * 3), _c([(2, 3)] * 2, 1), _c([(2, 3)] * 2, -1), _c([(), ()]), _c([(0,), (0,)]),
                      _c([(3,), ("bool", (3,))]), _c([(4,)]), _c([(2,), (2,)], dtype=np.float32)))  # fmt: skip
_shape_op("hstack", lambda xs, **k: np.hstack(xs, **k),
          _list_cases(_c([(2,), (3,)]), _c([(2, 1), (2, 3)]), _c([(), ()]), _c([(0,), (2,)]), _c([(2, 2, 1), (2, 1, 1)])))
_shape_op("vstack", lambda xs, **k: np.vstack(xs, **k),
          _list_cases(_c([(3,), (3,)]), _c([(1, 3), (2, 3)]), _c([(), ()]), _c([(0, 2), (1, 2)]), _c([(2, 2, 1), (1, 2, 1)])))
_shape_op("dstack", lambda xs, **k: np.dstack(xs, **k),
          _list_cases(_c([(3,), (3,)]), _c([(2, 3), (2, 3)]), _c([(2, 3, 1), (2, 3, 2)]), _c([(), ()])))
_shape_op("column_stack", np.column_stack,
          _list_cases(_c([(3,), (3,)]), _c([(3, 1), (3,)]), _c([(), ()]), _c([(2, 3), (2,)]), _c([(0,), (0, 2)])))
_shape_op("split", np.split, _cases(_c([(6,)], 3), _c([(6,)], [1, 4]), _c([(2, 6)], 2, 1), _c([(6,)], [2, 10]),
                                    _c([(0,)], 2), _c([(3, 4)], 4, -1), _c([(5,)], [-2]), _c([(4,)], [3, 1])))
_shape_op("array_split", np.array_split, _cases(_c([(5,)], 2), _c([(7,)], 3), _c([(2, 5)], 3, 1), _c([(0,)], 3),
                                                _c([(3,)], 5), _c([(6,)], [2, 3]), _c([(3, 4)], 3, -1)))
_shape_op("hsplit", np.hsplit, _cases(_c([(4,)], 2), _c([(2, 4)], 2), _c([(2, 4, 3)], [1]), _c([(3,)], [1])))
_shape_op("vsplit", np.vsplit, _cases(_c([(4, 3)], 2), _c([(4, 3)], [1, 3]), _c([(2, 3, 2)], 2)))
_shape_op("dsplit", np.dsplit, _cases(_c([(2, 3, 4)], 2), _c([(1, 1, 4)], [1, 2])))


def _pad_samples(rng, d):
    x1, x2 = make_array(rng, (3,), d), make_array(rng, (2, 3), d)
    out = []
    for mode in ("constant", "edge", "reflect", "symmetric", "wrap"):
        out += [Sample((x1, 2), {"mode": mode}), Sample((x2, ((1, 2), (0, 1))), {"mode": mode}),
                Sample((x2, (1, 2)), {"mode": mode}), Sample((x2, ((2,),)), {"mode": mode}),
                Sample((x1, 7), {"mode": mode}), Sample((x2, ((4, 5), (6, 3))), {"mode": mode}),
                Sample((make_array(rng, (1, 2), d), 3), {"mode": mode}), Sample((x2, 0), {"mode": mode}),
                Sample((np.asarray(make_array(rng, (), d)), 2), {"mode": mode}),
                Sample((make_array(rng, (0, 2), d), ((0, 0), (1, 1))), {"mode": mode})]  # fmt: skip
    out += [Sample((x2, 1), {"constant_values": make_array(rng, (), d)}), Sample((x2, 2), {"mode": "constant"}),
            Sample((x2, ((1, 2), (2, 1))), {"constant_values": ((1, 0), (0, 1))}),
            Sample((make_array(rng, (0,), d), 2)), Sample((x1, 1), {"constant_values": 1}), Sample((x1, (0, 2)))]  # fmt: skip
    return out


register(OpInfo("enp.pad", lambda x, w, **k: enp.pad(x, w, **k), lambda x, w, **k: np.pad(x, w, **k), ALL, _pad_samples,
                ref_in_dtype=True))  # fmt: skip


# --- contractions ----------------------------------------------------------------------------------------


def _contraction(name, ref, samples, **kw):
    register(OpInfo(f"enp.{name}", lambda *a, **k: getattr(enp, name)(*a, **k), ref, ALL, samples, tol=SUM_TOLERANCES, **kw))


_contraction("matmul", np.matmul, _cases(
    _c([(2, 3), (3, 4)]), _c([(3,), (3,)]), _c([(3,), (3, 4)]), _c([(2, 3), (3,)]), _c([(5, 2, 3), (3, 4)]),
    _c([(3,), (5, 3, 4)]), _c([(5, 2, 3), (5, 3, 4)]), _c([(2, 1, 2, 3), (4, 3, 2)]), _c([(5, 2, 3), (3,)]),
    _c([(0, 3), (3, 2)]), _c([(2, 0), (0, 2)]), _c([(2, 3), (5, 3, 4)]), _c([(1, 2, 3), (5, 3, 1)]), low=-2, high=3))
_contraction("dot", np.dot, _cases(
    _c([(2, 3), (3,)]), _c([(3,), (3,)]), _c([(), (2, 3)]), _c([(2, 3), ()]), _c([(2, 3, 4), (4, 5)]),
    _c([(2, 3, 4), (5, 4, 6)]), _c([(0,), (0,)]), _c([(3,), (3, 2)]), _c([(2, 0), (0, 3)]), low=-2, high=3))
_contraction("vdot", np.vdot, _cases(_c([(3,), (3,)]), _c([(2, 3), (3, 2)]), _c([(), ()]), _c([(0,), (0,)]),
                                     low=-2, high=3))  # fmt: skip
_contraction("vecdot", np.vecdot, _cases(
    _c([(2, 3), (3,)]), _c([(3,), (3,)]), _c([(3, 2), (3, 2)], axis=0), _c([(0,), (0,)]), _c([(2, 1, 3), (4, 3)]),
    _c([(2, 0, 3), (3,)]), low=-2, high=3))
_contraction("matvec", np.matvec, _cases(_c([(2, 3), (3,)]), _c([(5, 2, 3), (3,)]), _c([(2, 3), (5, 3)]),
                                         _c([(0, 3), (3,)]), _c([(2, 0), (0,)]), low=-2, high=3))  # fmt: skip
_contraction("vecmat", np.vecmat, _cases(_c([(3,), (3, 2)]), _c([(5, 3), (3, 2)]), _c([(3,), (5, 3, 2)]),
                                         _c([(0,), (0, 2)]), low=-2, high=3))  # fmt: skip
_contraction("inner", np.inner, _cases(_c([(3,), (3,)]), _c([(2, 3), (4, 3)]), _c([(), (2, 3)]), _c([(2, 3, 4), (4,)]),
                                       _c([(0,), (0,)]), _c([(2, 0), (3, 0)]), low=-2, high=3))  # fmt: skip
_contraction("outer", np.outer, _cases(_c([(3,), (4,)]), _c([(2, 2), (3,)]), _c([(), (3,)]), _c([(0,), (3,)]),
                                       low=-2, high=3))  # fmt: skip
_contraction("tensordot", lambda a, b, axes=2: np.tensordot(a, b, axes), _cases(
    _c([(2, 3, 4), (3, 4, 5)]), _c([(2, 3), (3, 4)], 1), _c([(2, 3), (4,)], 0), _c([(2, 3, 4), (3, 5)], ([1], [0])),
    _c([(2, 3, 4), (4, 3, 5)], ((1, 2), (1, 0))), _c([(2, 3, 4), (4, 5)], ([-1], [0])), _c([(2, 3), (5, 3)], (-1, -1)),
    _c([(3, 2), (2, 3)], ([-1, 0], [-2, -1])), _c([(0, 3), (3, 2)], 1), _c([(), ()], 0), low=-2, high=3))
_contraction("kron", np.kron, _cases(_c([(2,), (3,)]), _c([(2, 2), (2, 3)]), _c([(), (3,)]), _c([(2,), (2, 3)]),
                                     _c([(0, 2), (2, 2)]), _c([(2, 1, 2), (3,)]), low=-2, high=3))  # fmt: skip

_EINSUM = [
    ("ij,jk->ik", (2, 3), (3, 4)), ("ii->i", (3, 3)), ("ii", (3, 3)), ("ij->ji", (2, 3)), ("i,i", (3,), (3,)),
    ("...ij,...jk->...ik", (2, 1, 3, 4), (5, 4, 2)), ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)), ("i,j->ij", (2,), (3,)),
    ("ijk->", (2, 3, 4)), ("i->", (4,)), ("ij,ij->ij", (2, 3), (2, 3)), ("ij,jk,kl->il", (2, 3), (3, 4), (4, 2)),
    ("ij,j", (2, 3), (3,)), ("ba", (2, 3)), ("i,i,i->i", (3,), (3,), (3,)), ("ij,jk->ik", (0, 3), (3, 2)),
    (",->", (), ()), ("i,->i", (3,), ()), ("iij->j", (2, 2, 3)), ("ij...,j...->i...", (2, 3, 4), (3, 4)),
    ("...i,...i->...", (2, 3), (1, 3)), ("iji->j", (2, 3, 2)), ("ij,jk->ik", (2, 0), (0, 3)), ("ijj,jk->ik", (2, 3, 3), (3, 2)),
    ("ab,ab,ab->", (2, 2), (2, 2), (2, 2)), ("i...->...", (3, 2)), ("...", (2, 3)),
]  # fmt: skip


def _einsum_samples(rng, d):
    return [Sample((spec, *[make_array(rng, s, d, -2, 3) for s in shapes])) for spec, *shapes in _EINSUM]


_contraction("einsum", lambda spec, *xs: np.einsum(spec, *xs), _einsum_samples)


# --- ember.scipy.special -----------------------------------------------------------------------------------

_SPECIAL_TOL = {F16: (4e-3, 4e-3), BF16: (3e-2, 3e-2), np.dtype(np.float32): (1e-5, 1e-5),
                np.dtype(np.float64): (1e-12, 1e-13)}  # fmt: skip


def _special(name, ref, dtypes, samples, unsupported="", tol=None, **kw):
    register(OpInfo(f"scipy.special.{name}", lambda *a, **k: getattr(esp, name)(*a, **k), ref, dtypes, samples,
                    unsupported, out_dtype=to_float, tol=tol or _SPECIAL_TOL, **kw))  # fmt: skip


_NON_COMPLEX = BOOL + INTEGER + FLOATING


def _logsumexp_samples(rng, d):
    out = [Sample((make_array(rng, s, d),), {"axis": axis}) for s, axis in _AXES]
    x = make_array(rng, (2, 3), d)
    b = make_array(rng, (2, 3), d, 0, 3)
    out += [Sample((x,), {"axis": 1, "keepdims": True}), Sample((x,), {"b": b}), Sample((x,), {"b": b, "axis": 0}),
            Sample((make_array(rng, (3, 2), d, -50, 80),), {"axis": 0})]  # fmt: skip
    if is_inexact_dtype(d):
        out.append(Sample((np.array([[-np.inf, -np.inf], [np.inf, 1.0], [np.nan, 1.0], [-np.inf, 2.0]], d),), {"axis": 1}))
    if d.kind != "c" and d != np.bool_ and d not in UNSIGNED:
        neg = make_array(rng, (2, 3), d, -3, 3)
        out += [Sample((x,), {"b": neg, "axis": 1, "return_sign": True}), Sample((x,), {"return_sign": True})]
    return out


def _logsumexp_ref(a, axis=None, b=None, keepdims=False, return_sign=False):
    if b is not None and not isinstance(b, np.ndarray):
        b = np.asarray(b)
    if b is not None:
        b = b.astype(np.complex128 if b.dtype.kind == "c" else np.float64)
    out = sc.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)
    if return_sign:
        return out[0], np.asarray(out[1]).astype(a.dtype if a.dtype.kind in "fc" else np.float64)
    return out


_special("logsumexp", _logsumexp_ref, ALL, _logsumexp_samples)
_special("erf", sc.erf, _NON_COMPLEX, with_specials(unary_samples()), REAL_ONLY)
_special("erfc", sc.erfc, _NON_COMPLEX, with_specials(unary_samples(-3, 8)), REAL_ONLY)
_special("erfinv", sc.erfinv, _NON_COMPLEX, with_specials(unary_samples(-0.99, 0.99), values=(0.0, 1.0, -1.0, np.nan)),
         REAL_ONLY, tol={**_SPECIAL_TOL, np.dtype(np.float32): (2e-5, 2e-5)})
_special("gammaln", sc.gammaln, _NON_COMPLEX, unary_samples(0.1, 8.0), REAL_ONLY)
_special("digamma", sc.digamma, _NON_COMPLEX, unary_samples(0.1, 8.0), REAL_ONLY)


def _fixed_first_ad(firsts, low, high):
    """AD samples for a function differentiable in its second argument only. The first is held
    fixed: a Python float or an int32 array (the autodiff columns differentiate inexact arrays
    only; the int array promotes to the second's dtype and broadcasts against it). `firsts` pairs
    each first argument with the second's shape, drawn in [low, high)."""

    def make(rng, d):
        return [Sample((np.asarray(v, np.int32) if isinstance(v, list) else v, make_array(rng, shape, d, low, high)))
                for v, shape in firsts]  # fmt: skip

    return make


# Not differentiable in their first argument: polygamma in its integer order n, zeta in x (the
# exponent s; no primitive for its series of log(q + k) (q + k)^-s, so Riemann's zeta, q=None,
# has no derivative either), gammainc/gammaincc in a (no igamma_grad_a primitive). The jvp
# rules raise an EmberError naming that operand, so the AD samples hold it fixed.
_special("polygamma", lambda n, x: sc.polygamma(np.round(n).astype(int), x), _NON_COMPLEX,
         lambda rng, d: [Sample((np.array(m, d), make_array(rng, (4,), d, 0.5, 5.0))) for m in (0, 1)]
         + ([Sample((np.array(m, d), make_array(rng, (2, 3), d, 0.5, 5.0))) for m in (2, 3)] if d != np.bool_ else [])
         + [Sample((np.array([1, 0, 1], d), make_array(rng, (2, 1), d, 1, 5.0)))], REAL_ONLY,
         tol={**_SPECIAL_TOL, np.dtype(np.float32): (1e-4, 1e-5), np.dtype(np.float64): (1e-10, 1e-12)},
         ad_samples=_fixed_first_ad([(0, (4,)), (1, ()), (3, (2, 3)), ([1, 0, 1], (2, 1)), ([[2], [0]], (3,))],
                                    0.5, 5.0))  # fmt: skip
_special("zeta", lambda x, q=None: sc.zeta(x, q), _NON_COMPLEX,
         lambda rng, d: binary_samples(2, 6.0, shapes=[((4,), (4,)), ((), (2, 3)), ((0,), (1,))])(rng, d)
         + ([Sample((make_array(rng, (3,), d, 2, 6),))] if d != np.bool_ else []), REAL_ONLY,
         tol={**_SPECIAL_TOL, np.dtype(np.float32): (1e-5, 1e-6), np.dtype(np.float64): (1e-12, 1e-13)},
         ad_samples=_fixed_first_ad([(2.0, (4,)), (3.5, ()), ([2, 5, 3], (2, 1)), ([[4], [6]], (3,)), (2.5, (0,))],
                                    2, 6.0))  # fmt: skip
for _n in ("gammainc", "gammaincc"):
    _special(_n, getattr(sc, _n), _NON_COMPLEX, binary_samples(0.1, 6.0), REAL_ONLY,
             tol={**_SPECIAL_TOL, np.dtype(np.float32): (1e-5, 1e-6), np.dtype(np.float64): (1e-12, 1e-13)},
             ad_samples=_fixed_first_ad([(0.5, (4,)), (2.5, (2, 3)), (0.1, ()), ([1, 3, 6], (2, 1)), ([[2], [1]], (3,)),
                                         (1.0, (0,))], 0.1, 6.0))  # fmt: skip
_special("expit", lambda x: sc.expit(x) if x.dtype.kind != "c" else 1 / (1 + np.exp(-x)), ALL, with_specials(unary_samples()))
_special("logit", lambda x: sc.logit(x) if x.dtype.kind != "c" else np.log(x / (1 - x)), ALL,
         with_specials(unary_samples(0.01, 0.99), values=(0.0, 1.0, 0.5, np.nan)))
_special("xlogy", lambda x, y: sc.xlogy(x, y), ALL, with_specials(binary_samples(0, 3, rhs_low=0.1)))
_special("xlog1py", lambda x, y: sc.xlog1py(x, y), ALL, with_specials(binary_samples(0, 3, rhs_low=-0.9)))
_special("entr", sc.entr, _NON_COMPLEX, with_specials(unary_samples(0, 3)), REAL_ONLY)
