"""What a first session with ember tripped on (issue 14, item 6), one test each.

Keyword arguments through every transform, errors for objects that are not pytrees and for
in_axes of the wrong length, `import ember` bringing `ember.scipy`, and tracebacks that show the
user's code rather than ember's internals. References are written out by hand or with NumPy.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import os
import pathlib
import pickle
import re
import subprocess
import sys
import traceback
import types
import warnings

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.errors import ArgumentTypeError, EmberError, InvalidArgumentError

# --- keyword arguments -------------------------------------------------------------------------------


def scale(a, b=1.0):
    return a * b


def test_vmap_maps_keyword_arguments_along_axis_0():
    b = np.array([2.0, 3.0, 4.0], np.float32)
    out = ember.vmap(scale)(enp.arange(3.0), b=enp.asarray(b))
    np.testing.assert_array_equal(np.asarray(out), np.arange(3.0) * b)
    # in_axes covers the positional arguments only; keyword ones stay mapped along axis 0
    out = ember.vmap(lambda a, b: a * b, in_axes=(None,))(enp.arange(2.0), b=enp.asarray([1.0, 10.0]))
    np.testing.assert_array_equal(np.asarray(out), [[0.0, 1.0], [0.0, 10.0]])
    # pytrees as keyword arguments, chunked
    out = ember.vmap(lambda a, p: a * p["w"], chunk_size=2)(enp.arange(3.0), p={"w": enp.full(3, 2.0)})
    np.testing.assert_array_equal(np.asarray(out), [0.0, 2.0, 4.0])


def test_vmap_keyword_arguments_that_cannot_be_mapped():
    with pytest.raises(InvalidArgumentError, match=r"kwargs\['b'\] is a scalar.*keyword arguments are mapped along "
                                                   r"axis 0"):
        ember.vmap(scale)(enp.arange(3.0), b=2.0)
    with pytest.raises(InvalidArgumentError, match=r"args\[0\].*size 3, kwargs\['b'\].*size 4"):
        ember.vmap(scale)(enp.arange(3.0), b=enp.ones(4))


def test_vmap_keyword_arguments_under_other_transforms():
    x = enp.arange(3.0)
    np.testing.assert_array_equal(np.asarray(ember.jit(ember.vmap(scale))(x, b=x)), np.arange(3.0) ** 2)
    g = ember.grad(lambda a: enp.sum(ember.vmap(scale)(a, b=a)))(x)  # d/da sum(a * a) = 2a
    np.testing.assert_array_equal(np.asarray(g), 2 * np.arange(3.0))
    jac = ember.vmap(ember.jacrev(scale))(enp.ones((2, 3)), b=enp.full((2, 3), 5.0))
    np.testing.assert_array_equal(np.asarray(jac), np.broadcast_to(5 * np.eye(3), (2, 3, 3)))


def summed(a, b=1.0):
    return enp.sum(a * b)


@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "jacrev", "jacfwd", "hessian", "jacobian"])
def test_differentiation_passes_keyword_arguments_through(transform):
    # As in JAX: keyword arguments reach the function and are not differentiated.
    a, b = np.array([1.0, 2.0, 3.0], np.float32), np.array([2.0, 5.0, 7.0], np.float32)
    fun = summed if transform in ("grad", "value_and_grad", "hessian") else scale
    out = getattr(ember, transform)(fun)(enp.asarray(a), b=enp.asarray(b))
    want = {"grad": b, "value_and_grad": (np.float32(a @ b), b), "jacrev": np.diag(b), "jacfwd": np.diag(b),
            "jacobian": np.diag(b), "hessian": np.zeros((3, 3))}[transform]  # fmt: skip
    for got, ref in zip(out if isinstance(want, tuple) else (out,), want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(np.asarray(got), ref)


def test_jit_keyword_arguments_are_dynamic_or_static_and_cached():
    f = ember.jit(lambda a, b=1.0, *, c=0.0: a * b + c)
    x = enp.arange(3.0)
    np.testing.assert_array_equal(np.asarray(f(x, b=enp.full(3, 2.0))), [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(f(x, b=enp.full(3, 3.0))), [0.0, 3.0, 6.0])  # new values: same trace
    assert f.trace_count == 1
    f(x, c=enp.ones(3), b=enp.ones(3))
    f(x, b=enp.ones(3), c=enp.ones(3))  # keyword order does not matter
    assert f.trace_count == 2
    g = ember.jit(lambda a, n=1, *, mode="scale": a * n if mode == "scale" else -a, static_argnames=("n", "mode"))
    assert np.asarray(g(x, n=2)).tolist() == [0.0, 2.0, 4.0]
    assert np.asarray(g(x, n=3)).tolist() == [0.0, 3.0, 6.0]
    assert np.asarray(g(x, mode="negate")).tolist() == [0.0, -1.0, -2.0]
    g(x, mode="negate")
    assert g.trace_count == 3  # one per static value, none for the repeat


def test_checkpoint_and_custom_jvp_take_keyword_arguments():
    x = enp.arange(3.0)
    g = ember.grad(lambda a: enp.sum(ember.checkpoint(scale)(a, b=enp.full(3, 4.0))))(x)
    np.testing.assert_array_equal(np.asarray(g), [4.0, 4.0, 4.0])


# --- objects that are not pytrees, in_axes of the wrong length -------------------------------------------


class Params:
    def __init__(self, w):
        self.w = w


@dataclasses.dataclass
class DataParams:
    w: object


@pytest.mark.parametrize("transform", [
    lambda f, q: ember.grad(f)(q),
    lambda f, q: ember.vmap(f)(q),
    lambda f, q: ember.jit(f)(q),
    lambda f, q: ember.jacrev(f)(q),
    lambda f, q: ember.jvp(f, (q,), (q,)),
    lambda f, q: ember.lax.cond(True, f, f, q),
    lambda f, q: ember.lax.fori_loop(0, 2, lambda i, c: c, q),
], ids=["grad", "vmap", "jit", "jacrev", "jvp", "lax.cond", "lax.fori_loop"])
def test_an_unregistered_class_is_named_with_how_to_register_it(transform):
    with pytest.raises(ArgumentTypeError, match=r"Params, which is neither an array nor a pytree.*"
                                                r"ember\.tree\.register_node\(Params, flatten, unflatten\)") as info:
        transform(lambda q: enp.sum(q.w), Params(enp.ones(3)))
    assert "dtype object" not in str(info.value)
    assert isinstance(info.value, TypeError)


def test_an_unregistered_dataclass_points_to_register_dataclass():
    with pytest.raises(ArgumentTypeError, match=r"DataParams.*@ember\.tree\.register_dataclass"):
        ember.grad(lambda q: enp.sum(q.w))(DataParams(enp.ones(3)))


def test_a_registered_class_goes_through():
    @dataclasses.dataclass
    class Registered:
        w: object

    ember.tree.register_dataclass(Registered)
    g = ember.grad(lambda q: enp.sum(q.w ** 2))(Registered(enp.arange(3.0)))
    np.testing.assert_array_equal(np.asarray(g.w), [0.0, 2.0, 4.0])


def test_a_string_argument_points_to_static_arguments():
    with pytest.raises(ArgumentTypeError, match=r"argument mode is a str.*static_argnames"):
        ember.jit(lambda x, mode: x)(enp.ones(2), "fast")


def test_in_axes_of_the_wrong_length_says_how_many_were_expected_and_given():
    f = ember.vmap(lambda a, b: a * b, in_axes=(0,))
    with pytest.raises(InvalidArgumentError, match=r"in_axes=\(0,\) has 1 entry, but the function was called with 2 "
                                                   r"positional argument\(s\)") as info:
        f(enp.ones(3), enp.ones(3))
    assert "empty key path" not in str(info.value)
    with pytest.raises(InvalidArgumentError, match=r"out_axes=\(0, 0, 0\) has 3 entries, but the function returned a "
                                                   r"tuple of 2 output\(s\)"):
        ember.vmap(lambda a: (a, a), out_axes=(0, 0, 0))(enp.ones(3))


# --- import ember brings ember.scipy -------------------------------------------------------------------


def test_import_ember_makes_ember_scipy_available():
    code = ("import ember, numpy as np; "
            "print(float(ember.scipy.special.logsumexp(ember.numpy.asarray([0.0, 0.0]))))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert abs(float(out) - np.log(2.0)) < 1e-6


def test_errors_are_ember_errors():
    with pytest.raises(EmberError):
        enp.ones(2)[3]


# --- traceback filtering --------------------------------------------------------------------------------

EMBER_DIR = os.path.dirname(os.path.abspath(ember.__file__)) + os.sep


@pytest.fixture
def filtering(monkeypatch):
    monkeypatch.setenv("EMBER_TRACEBACK_FILTERING", "on")  # the suite turns it off (tests/conftest.py)


def _frames(err: BaseException) -> list[traceback.FrameSummary]:
    return traceback.extract_tb(err.__traceback__)


def _files(err: BaseException) -> list[str]:
    return [f.filename for f in _frames(err)]


def _loss(w, x):
    return enp.sum(x @ w)  # the line the error points to


def test_a_shape_error_under_transforms_shows_only_the_users_frames(filtering):
    step = ember.jit(ember.vmap(ember.grad(_loss), in_axes=(None, 0)))
    with pytest.raises(ember.errors.ShapeError, match="matmul") as info:
        step(enp.ones((3, 2)), enp.ones((5, 4, 4)))
    frames = _frames(info.value)
    assert not [f for f in frames if f.filename.startswith(EMBER_DIR)], [f.filename for f in frames]
    assert [f.name for f in frames] == ["test_a_shape_error_under_transforms_shows_only_the_users_frames", "_loss"]
    assert frames[-1].line == "return enp.sum(x @ w)  # the line the error points to"
    text = "".join(traceback.format_exception(info.value))
    assert len(text.splitlines()) <= 10, text  # 66 lines with every frame


def test_eager_errors_show_the_call_and_not_the_numpy_error_ember_replaced(filtering):
    with pytest.raises(ember.errors.ShapeError) as info:
        enp.ones((2, 3)) + enp.ones(4)
    assert _files(info.value) == [__file__]
    text = "".join(traceback.format_exception(info.value))
    assert "During handling" not in text and "operands could not be broadcast" not in text
    for call in (lambda: enp.sum(enp.ones((2, 3)), axis=3), lambda: enp.ones((2, 3))[7],
                 lambda: ember.lax.cond(True, lambda: enp.ones(2), lambda: enp.ones(3)),
                 lambda: ember.random.normal(ember.random.key(0), (2,), dtype="int32")):  # fmt: skip
        with pytest.raises(EmberError) as info:
            call()
        assert set(_files(info.value)) == {__file__}, _files(info.value)


def test_filtering_off_shows_every_frame(monkeypatch):
    monkeypatch.setenv("EMBER_TRACEBACK_FILTERING", "off")
    with pytest.raises(ember.errors.ShapeError) as info:
        ember.grad(_loss)(enp.ones((3, 2)), enp.ones((4, 4)))
    inside = [f for f in _files(info.value) if f.startswith(EMBER_DIR)]
    assert len(inside) > 5 and any(f.endswith("autodiff.py") for f in inside)


def test_the_users_own_errors_pass_through_ember_filtered(filtering):
    def loss(w):
        return enp.sum(w * undefined_name)  # noqa: F821

    with pytest.raises(NameError) as info:
        ember.jit(ember.grad(loss))(enp.ones(3))
    assert set(_files(info.value)) == {__file__}


def test_an_error_in_a_callback_under_jit_shows_the_users_frames_only(filtering):
    def callback(v):
        raise ValueError("the user's callback failed")

    out = ember.ShapeDtypeStruct((2,), np.float32)
    with pytest.raises(ValueError, match="callback failed") as info:
        ember.jit(lambda v: ember.pure_callback(callback, out, v))(enp.ones(2))
    assert set(_files(info.value)) == {__file__}, _files(info.value)  # not the generated program's frame


def test_a_bug_inside_ember_keeps_its_frames(filtering):
    # An exception that is not an ember error, raised in ember's own files, is a bug: nothing is dropped.
    namespace: dict = {}
    exec(compile("def broken(x):\n    return 1 / 0\n", EMBER_DIR + "_pretend_internal.py", "exec"), namespace)
    with pytest.raises(ZeroDivisionError) as info:
        ember.vmap(lambda x: namespace["broken"](x))(enp.ones(2))
    assert any(f.endswith("vmap.py") for f in _files(info.value))
    assert _files(info.value)[-1] == EMBER_DIR + "_pretend_internal.py"


def test_boundaries_keep_names_and_identity_where_it_matters():
    assert enp.sum.__name__ == "sum" and enp.sum is ember.numpy._reductions.sum  # (its own boundary: a fast lane)
    assert enp.mean.__name__ == "mean" and enp.mean.__wrapped__ is ember.numpy._reductions.mean
    assert enp.sin.__name__ == "sin" and enp.sin is ember.numpy._ufuncs.sin
    assert ember.grad(_loss).__name__ == "grad(_loss)"
    # lax.reduce_window recognises lax.max through its boundary
    out = ember.lax.reduce_window(enp.arange(4.0), -np.inf, ember.lax.max, (2,), (2,), "VALID")
    assert np.asarray(out).tolist() == [1.0, 3.0]


def test_boundaries_pickle_and_aliases_stay_one_function():
    # pickle looks a function up by __module__ and __qualname__: the plain function found there was not the
    # boundary, so pickling enp.sum (multiprocessing, a pickled partial) raised PicklingError.
    for fn in (enp.sum, enp.amax, enp.sin, enp.add, enp.where, enp.broadcast_to, ember.lax.add, ember.grad, ember.tree.map,
               enp.linalg.norm, ember.random.normal):
        assert pickle.loads(pickle.dumps(fn)) is fn
    assert pickle.loads(pickle.dumps(functools.partial(enp.sum, axis=0)))(enp.ones((2, 3))).tolist() == [2.0] * 3
    assert enp.amax is enp.max and ember.remat is ember.checkpoint and enp.absolute is enp.abs
    assert (enp.sum.__module__, enp.sum.__qualname__, enp.amax.__qualname__) == ("ember.numpy", "sum", "max")


# --- the README stands alone; test output --------------------------------------------------------------

REPO = pathlib.Path(__file__).resolve().parent.parent


def test_the_readme_and_docs_link_only_inside_the_repository():
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = doc.read_text()
        assert "../shared" not in text, doc
        for target in re.findall(r"\]\(([^)#]+)\)", text):
            if "://" not in target:
                assert (doc.parent / target).resolve().is_file(), f"{doc.name} links to missing {target}"
    readme = (REPO / "README.md").read_text()
    assert "docs/api.md" in readme and "docs/design.md" in readme


def test_the_readme_names_every_extra():
    pyproject = (REPO / "pyproject.toml").read_text()
    section = pyproject.split("[project.optional-dependencies]")[1].split("\n[")[0]
    extras = re.findall(r"^(\w+) = ", section, flags=re.MULTILINE)
    readme = (REPO / "README.md").read_text()
    assert {"test", "demo", "parity", "cuda"} <= set(extras)
    for extra in [*extras, "distributed"]:
        assert f"`{extra}`" in readme, extra


def _summary(option: bool, env: str = "") -> list[str]:
    spec = importlib.util.spec_from_file_location("_ember_conftest", REPO / "tests" / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    lines: list[str] = []
    reporter = types.SimpleNamespace(write_line=lines.append)
    config = types.SimpleNamespace(args=["tests/test_op_db.py"], getoption=lambda name: option)
    saved = os.environ.pop("EMBER_OP_DB_TABLE", None)
    try:
        if env:
            os.environ["EMBER_OP_DB_TABLE"] = env
        conftest.pytest_terminal_summary(reporter, 0, config)
    finally:
        os.environ.pop("EMBER_OP_DB_TABLE", None)
        if saved is not None:
            os.environ["EMBER_OP_DB_TABLE"] = saved
    return lines


def test_the_op_database_table_prints_on_request_with_readable_headers():
    plain = _summary(option=False)
    assert any(line.startswith("op database:") for line in plain)
    assert any("--op-db-table" in line for line in plain) and len(plain) < 5
    for table in (_summary(option=True), _summary(option=False, env="1")):
        header = next(line for line in table if "bool" in line).split()
        assert header == ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64",
                          "c64", "c128"]  # fmt: skip
        assert any(line.startswith("enp.sum ") for line in table)


def test_the_op_database_references_warn_about_nothing():
    # NumPy's references warned about empty and complex samples (75 warnings in a clean run): the
    # checker catches them around the reference, and ember's own calls stay visible.
    import test_op_db

    ops = {op.name: op for op in test_op_db.OPS}
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        warnings.filterwarnings("error", message="Mean of empty slice")
        warnings.filterwarnings("error", message="Degrees of freedom")
        for name, dtype in [("enp.nanmean", np.float32), ("enp.var", np.float32), ("enp.sum", np.complex64),
                            ("lax.convert_element_type", np.complex64)]:  # fmt: skip
            test_op_db._check_eager(ops[name], np.dtype(dtype), seed=0)
