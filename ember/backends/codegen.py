"""Programs to Python: the NumPy backend's compiler.

`compile_program` turns a program (see ember/core/ir.py) into the source of a
Python function that calls the backend's kernels directly on raw buffers, one
line per equation, in the order of the program::

    def mlp_step(a, b, c):
        d = ops.dot_general(c, a, dimension_numbers=(((1,), (0,)), ((), ())), precision=None, ...)
        e = ops.tanh(d)
        ...
        return [e]

There is no per-equation dispatch, shape checking or wrapping: the program was
checked when it was traced. The source is what runs (it is compiled with a file
name of its own and kept in `linecache`), so a debugger steps through it and a
traceback shows its lines. Nothing here imports the core: a program is read
through its attributes (`constvars`, `invars`, `eqns`, `outvars`; each
equation's `primitive.name`, `inputs`, `params`, `outvars`).
"""

from __future__ import annotations

import itertools
import keyword
import linecache
from collections.abc import Callable, Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from ember.backends import filled
from ember.backends.buffers import KEEP_MIN_BYTES, Arena, plan_buffers, ufunc_for
from ember.backends.fusion import Fused, plan_fusion
from ember.backends.shared_patches import conv_from_patches, conv_keeping_patches, plan_patches
from ember.backends.tiled import tiled_binary

__all__ = ["Compiled", "compile_program"]

_counter = itertools.count()


class Compiled:
    """A compiled program: call it with the raw buffers of its constants and inputs (in that order);
    it returns the list of raw output buffers. `source` is the Python it runs."""

    __slots__ = ("filename", "fn", "source")

    def __init__(self, fn: Callable[..., list], source: str, filename: str):
        self.fn = fn
        self.source = source
        self.filename = filename

    def __call__(self, *buffers: Any) -> list:
        return self.fn(*buffers)

    def __repr__(self) -> str:
        return f"<compiled {self.filename}>"


def _names() -> Any:
    """a, b, ..., z, ba, bb, ... as in the printed IR, skipping Python keywords and `ops`/`np`."""
    for n in itertools.count():
        s = ""
        while True:
            s = chr(ord("a") + n % 26) + s
            n = n // 26 - 1
            if n < 0:
                break
        if not keyword.iskeyword(s) and s not in ("ops", "np", "dtype", "inf", "nan"):
            yield s


_PARAM_NAMESPACE = {"dtype": np.dtype, "inf": float("inf"), "nan": float("nan"), "np": np}


def _bias_like(eqn: Any) -> bool:
    """Whether ufunc equation `eqn` combines a large operand of its result's shape with a small array
    broadcast against it (at most an eighth of its size), as a bias is added to an activation."""
    if len(eqn.inputs) != 2:
        return False
    out = eqn.outvars[0].aval
    big, small = sorted(eqn.inputs, key=lambda v: -v.aval.size)
    return (big.aval.shape == out.shape and type(small).__name__ == "Var" and small.aval.size > 1
            and small.aval.size * 8 <= out.size)  # fmt: skip


def _literal(value: Any) -> str | None:
    """`repr(value)` when it evaluates back to the same value of the same type; else None. Numbers
    must come back bit for bit: ``repr(np.complex64(-0.5j))`` evaluates with a real part of -0.0."""
    text = repr(value)
    try:
        back = eval(text, dict(_PARAM_NAMESPACE))
    except Exception:  # noqa: BLE001 - any repr that does not evaluate is simply not a literal
        return None
    if type(back) is not type(value):
        return None
    if isinstance(value, (np.generic, float, complex)):
        return text if np.asarray(back).tobytes() == np.asarray(value).tobytes() else None
    try:
        same = bool(back == value)
    except Exception:  # noqa: BLE001 - comparison of exotic parameters (arrays): not a literal
        return None
    return text if same else None


class Namer:
    """The names a generated function refers to, shared by this compiler and the CUDA one (codegen_cuda.py):
    `var_name` (variable -> its name), `ops` (name -> kernel, bound as ``ops.<name>``), `consts` (name ->
    a value without a literal) and `literals` (source text -> the name it is bound to once, above the
    function). `kernel_for(primitive)` gives the kernel an ``ops.`` name refers to (None: no kernel);
    `names` the variables' names, in order."""

    def __init__(self, kernel_for: Callable[[Any], Any] | None, names: Iterator[str]):
        self.kernel_for = kernel_for
        self.names = names
        self.var_name: dict[Any, str] = {}
        self.ops: dict[str, Any] = {}
        self.consts: dict[str, Any] = {}
        self.literals: dict[str, str] = {}

    def name_of(self, v: Any) -> str:
        """The name of a variable, or of a literal's value."""
        if type(v).__name__ == "Literal":
            # A name bound once, not the text inline: `np.float32(2.0)` would build a scalar every call.
            text = _literal(v.value)
            if text is None:
                key = f"_c{len(self.consts)}"
                self.consts[key] = v.value
                return key
            return self.literals.setdefault(text, f"_l{len(self.literals)}")
        return self.var_name[v]

    def param(self, value: Any) -> str:
        """A parameter's source text: its literal, else the name of a constant bound to it."""
        text = _literal(value)
        if text is None:
            key = f"_p{len(self.consts)}"
            self.consts[key] = value
            return key
        return text

    def op_name(self, prim: Any) -> str:
        """``ops.<name>`` for a primitive's kernel; two kernels of one name get distinct names."""
        fn = self.kernel_for(prim) if self.kernel_for is not None else None
        ops = self.ops
        ident = prim.name if prim.name.isidentifier() and not keyword.iskeyword(prim.name) else f"op_{len(ops)}"
        while ident in ops and ops[ident] is not fn:
            ident += "_"
        ops[ident] = fn
        return f"ops.{ident}"

    def assignment(self, eqn: Any, call: str) -> str:
        """The line ``    <eqn's outputs> = <call>``, naming the outputs."""
        for v in eqn.outvars:
            self.var_name[v] = next(self.names)
        outs = [self.var_name[v] for v in eqn.outvars]
        if eqn.primitive.multiple_results:
            target = f"{outs[0]}," if len(outs) == 1 else ", ".join(outs) if outs else "_"
        else:
            target = outs[0]
        return f"    {target} = {call}"


_ORDER_FREE_READERS = frozenset({"reduce_sum", "reduce_max", "reduce_min", "select_n"})


def compile_program(program: Any, kernel_for: Callable[[Any], Callable[..., Any]], name: str = "program",
                    donated: Sequence[int] = ()) -> Compiled:  # fmt: skip
    """Generate, compile and return the Python function that runs `program` on raw buffers.

    `kernel_for(primitive)` gives the function that runs a primitive on raw buffers (with its
    parameters as keywords). The generated function takes the constants' buffers, then the inputs',
    and returns the list of output buffers (or, for a literal output, its value). The buffers of the
    inputs at positions `donated` may be written once they are dead (results go into them).

    >>> from ember.backends import cpu
    >>> program = ember.make_ir(lambda x: enp.sin(x) * 2.0)(enp.ones(3)).program
    >>> compiled = compile_program(program, lambda prim: cpu.kernel(prim.name))
    >>> print(compiled.source)
    def program(a, b):
        c = ops.sin(b)
        d = np.multiply(c, a, out=c)
        return [d]
    """
    namer = Namer(kernel_for, _names())
    names = namer.names
    var_name, ops, consts, literals = namer.var_name, namer.ops, namer.consts, namer.literals
    name_of, param, op_name = namer.name_of, namer.param, namer.op_name

    def ufunc_name(eqn: Any) -> str:
        fn = ufunc_for(eqn, kernel_for(eqn.primitive))
        return f"np.{fn.__name__}" if getattr(np, fn.__name__, None) is fn else op_name(eqn.primitive)

    def filled_args(eqn: Any, args: list[str]) -> list[str]:
        """`args` of a max/min ufunc equation with its scalar literal as an array laid out like the
        other operand (see filled.py), where that pays."""
        if len(args) != 2 or ufunc_for(eqn, kernel_for(eqn.primitive)) not in filled.FILLED_UFUNCS:
            return args
        aval = eqn.outvars[0].aval  # (a ufunc equation: one result)
        if not filled.pays(aval.size, aval.dtype):
            return args
        for k, v in enumerate(eqn.inputs):
            other = eqn.inputs[1 - k]
            if type(v).__name__ == "Literal" and not v.aval.shape and other.aval.shape == aval.shape:
                key = f"_f{len(consts)}"
                consts[key] = filled.filled(v.value, aval.dtype, aval.size)
                return [f"_like({key}, {args[1 - k]})" if j == k else a for j, a in enumerate(args)]
        return args

    def new_buffer(how: str | None, shape: tuple[int, ...], dtype: Any) -> str:
        """The expression of a new buffer that the program keeps or recycles (see buffers.py)."""
        if how == "kept":
            kept.append((shape, dtype))
            return f"_k{len(kept) - 1}"
        if how == "recycled":
            recycled.append((shape, dtype))
            return f"_arena.recycle(_o{len(recycled) - 1}, {len(recycled) - 1})"
        return f"np.empty({shape}, {dtype!r})"

    def fused_lines(i: int, group: Fused) -> list[str]:
        """The loop that runs `group` block by block (see fusion.py)."""
        for v in group.outvars:
            var_name[v] = next(names)
        rows, n = group.rows, group.shape[0]
        dtype = group.outvars[0].aval.dtype if group.outvars else group.eqns[0].outvars[0].aval.dtype
        block = (rows, *group.shape[1:])
        head = [f"    # {len(group.eqns)} elementwise equations fused on {group.shape}, {rows} rows a block"]
        for v, into, how in zip(group.outvars, plan.into[i], plan.alloc.get(i, [None] * len(group.outvars))):
            buffer = var_name[into] if into is not None else new_buffer(how, v.aval.shape, dtype)
            head.append(f"    {var_name[v]} = {buffer}")
            if into is None or into in c_order:
                c_order.add(v)
        sliced = [v for v in (*group.inputs, *group.outvars) if v.aval.shape]
        local = {v: f"{var_name[v]}_" for v in sliced}
        last_use = {v: k for k, eqn in enumerate(group.eqns) for v in eqn.inputs}
        free: list[str] = []
        scratch: list[str] = []
        body = []
        for k, eqn in enumerate(group.eqns):
            args = filled_args(eqn, [local.get(v) or name_of(v) for v in eqn.inputs])
            for v in set(eqn.inputs):
                if v in local and v not in sliced and last_use[v] == k:
                    free.append(local[v])  # dead: its block buffer may take this result
            out = eqn.outvars[0]
            if out not in local:
                if not free:
                    scratch.append(f"_t{next(scratch_ids)}")
                    free.append(scratch[-1] if n % rows == 0 else f"{scratch[-1]}_")
                local[out] = free.pop()
            body.append(f"        {ufunc_name(eqn)}({', '.join(args)}, out={local[out]})")
        head += [f"    {t} = {new_buffer('kept', block, dtype)}" for t in scratch]
        loop = [f"    for _r in range(0, {n}, {rows}):", f"        _b = slice(_r, _r + {rows})"]
        if sliced:
            loop.append(f"        {', '.join(local[v] for v in sliced)}, = {', '.join(f'{var_name[v]}[_b]' for v in sliced)},")
        if scratch and n % rows:
            loop.append(f"        {', '.join(f'{t}_' for t in scratch)}, = {', '.join(f'{t}[:{n} - _r]' for t in scratch)},")
        return head + loop + body

    items = plan_fusion(program, kernel_for)
    plan = plan_buffers(program, kernel_for, items, donated)
    keeps_patches, uses_patches = plan_patches(items, kernel_for)  # see shared_patches.py
    # Results that only elementwise code, reductions or the caller read: a kernel may lay them out in
    # whichever order it computes fastest (dot_general's `any_order`); a reshape or a contraction would
    # have to copy a transposed one back.
    readers: dict[Any, list[Any]] = {}
    for item in items:
        for v in item.inputs:
            readers.setdefault(v, []).append(item)

    def any_order(v: Any) -> bool:
        return all(type(r) is Fused or ufunc_for(r, kernel_for(r.primitive)) is not None
                   or r.primitive.name in _ORDER_FREE_READERS for r in readers.get(v, ()))  # fmt: skip
    c_order: set[Any] = set()  # variables known to be C-contiguous: results in buffers of the program's
    kept: list[tuple[tuple[int, ...], Any]] = []  # shapes and dtypes of the buffers kept between calls
    recycled: list[tuple[tuple[int, ...], Any]] = []  # ... and of those recycled
    scratch_ids = itertools.count()
    for v in (*program.constvars, *program.invars):
        var_name[v] = next(names)
    fn_name = name if name.isidentifier() and not keyword.iskeyword(name) else "program"
    lines = [f"def {fn_name}({', '.join(var_name[v] for v in (*program.constvars, *program.invars))}):"]
    for i, eqn in enumerate(items):
        if type(eqn) is Fused:
            lines += fused_lines(i, eqn)
            continue
        args = filled_args(eqn, [name_of(v) for v in eqn.inputs])
        args += [f"{k}={param(val)}" for k, val in eqn.params.items()]
        if i in keeps_patches:
            ops["conv_keeping_patches"] = conv_keeping_patches
            line = namer.assignment(eqn, f"ops.conv_keeping_patches({', '.join(args)})")
            lines.append(line.replace(" = ", f", _m{keeps_patches[i]} = ", 1))
            continue
        if i in uses_patches:
            ops["conv_from_patches"] = conv_from_patches
            args.insert(2, f"_m{uses_patches[i]}")
            lines.append(namer.assignment(eqn, f"ops.conv_from_patches({', '.join(args)})"))
            continue
        if eqn.primitive.name == "dot_general" and any_order(eqn.outvars[0]):
            args.append("any_order=True")
        how = plan.alloc.get(i, [None])[0]
        if i in plan.into:  # the result goes into a dead buffer (see buffers.py)
            into = plan.into[i]
            call = f"{ufunc_name(eqn)}({', '.join(args)}, out={var_name[into]})"
            others = [v for v in eqn.inputs if v is not into and type(v).__name__ == "Var" and v.aval.shape == into.aval.shape]
            if into in c_order:
                if ufunc_for(eqn, kernel_for(eqn.primitive)) is not None:  # (a ufunc keeps out's layout)
                    c_order.add(eqn.outvars[0])
            elif others and into.aval.ndim > 1 and into.aval.size * into.aval.dtype.itemsize <= KEEP_MIN_BYTES:
                # A transposed dead buffer and a C-ordered operand: the ufunc would write across memory (twice
                # as slow as reading across it), and a reshape after it copy the result back. A new result
                # instead (small: from malloc's pools), which NumPy lays out like the C-ordered operand.
                ordered = " or ".join(f"{name_of(v)}.flags.c_contiguous" for v in others)
                new = f"{ufunc_name(eqn)}({', '.join(args)})"
                call = f"({call} if {var_name[into]}.flags.c_contiguous or not ({ordered}) else {new})"
        elif how is not None:  # ... or a new one the program keeps or recycles
            aval = eqn.outvars[0].aval
            buffer = new_buffer(how, aval.shape, aval.dtype)
            # A ufunc lays out a new result like its operands; into a C-ordered buffer, a transposed
            # operand would be read across memory (several times slower): then let NumPy allocate.
            unsure = [] if i in plan.fresh else [v for v in eqn.inputs if v not in c_order and v.aval.shape == aval.shape]
            fn = op_name(eqn.primitive) if i in plan.fresh else ufunc_name(eqn)
            call = f"{fn}({', '.join(args)}, out={buffer})"
            if unsure:
                checks = " and ".join(f"{name_of(v)}.flags.c_contiguous" for v in dict.fromkeys(unsure))
                # a transposed operand and a small one broadcast against it (a bias): see tiled.py
                other = f"_tiled({fn}, {', '.join(args)})" if _bias_like(eqn) else f"{fn}({', '.join(args)}, out=None)"
                call = f"({call} if {checks} else {other})"
            elif i not in plan.fresh:  # (an out= kernel may lay its result out otherwise in `out`'s memory)
                c_order.add(eqn.outvars[0])
        else:
            call = f"{op_name(eqn.primitive)}({', '.join(args)})"
        lines.append(namer.assignment(eqn, call))
    if kept or recycled:  # take the program's buffers first, give them back last
        held = [*(f"_k{j}" for j in range(len(kept))), *(f"_o{j}" for j in range(len(recycled)))]
        lines[1:1] = ["    _k = _arena.take()", f"    {', '.join(held)}, = _k"]
        lines.append("    _arena.give(_k)")
    lines.append(f"    return [{', '.join(name_of(v) for v in program.outvars)}]")
    source = "\n".join([*(f"{key} = {text}" for text, key in literals.items()), *lines]) + "\n"

    filename = f"<ember-jit-{next(_counter)}-{fn_name}>"
    namespace = {"ops": SimpleNamespace(**ops), "np": np, "_arena": Arena(kept, recycled), "_tiled": tiled_binary,
                 "_like": filled.fill_like, **_PARAM_NAMESPACE, **consts}  # fmt: skip
    code = compile(source, filename, "exec")
    exec(code, namespace)  # noqa: S102 - the generated program is the product
    # Tracebacks and debuggers read source lines through linecache: register ours under its file name.
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    return Compiled(namespace[fn_name], source, filename)
