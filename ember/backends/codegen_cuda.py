"""Programs to Python on CuPy buffers, with fused CUDA kernels: the CUDA backend's compiler.

Status: the generated source is tested as text, and its C compiled with gcc; no GPU has run it yet.

`compile_program` does what the NumPy backend's compiler (codegen.py) does — one line of Python per
equation, calling the backend's kernel on raw buffers — except that each group of elementwise
equations (and the reduction that ends a chain: see fusion_cuda.py) runs as ONE generated CUDA kernel,
a ``cupy.ElementwiseKernel`` or ``cupy.ReductionKernel`` declared at the top of the generated module::

    _k0 = xp.ElementwiseKernel('float32 in0, float32 in1', 'float32 out0', ..., preamble=...)

    def step(a, b):
        c = xp.empty((1024, 256), _l2)
        _k0(a, b, c)  # 14 equations: mul add mul ...
        d = ops.dot_general(c, ...)
        ...

The kernels' C (c_source.py) is part of `Compiled.source`, next to the Python. A kernel object is made
once per compile; CuPy compiles it with NVRTC on its first call and keeps the binary in its on-disk
cache (``~/.cupy/kernel_cache``, keyed by a hash of the source, options and GPU architecture), so a
second process pays no compile, only the module load; and as a kernel's C name is a hash of its text
(``ember_3f9c0a17d2``), the same chain in another program is the same source, compiled once. `first_call_times()` reports how
long each compiled program's first call took (mostly NVRTC), for measuring that.

Generating the text needs no CuPy (`generate`); only `compile_program` (given ``xp=cupy``) makes the
kernel objects. Sub-programs of control flow run through the same compiler (see
ember/transforms/_compile.py's `active_backend`; a while loop's predicate and a cond's index are read on
the host there). graphs_cuda.py replays a whole program as one CUDA graph, by the rule it documents.
Nothing here imports the core or the transforms.
"""

from __future__ import annotations

import hashlib
import itertools
import keyword
import linecache
import time
from collections.abc import Callable, Sequence
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np

from ember.backends import c_source
from ember.backends.codegen import _PARAM_NAMESPACE, Compiled, Namer, _names
from ember.backends.fusion_cuda import Group, plan_groups
from ember.backends.graphs_cuda import Graphed, graph_worthy

__all__ = ["Generated", "KernelSpec", "compile_program", "first_call_times", "generate"]

_counter = itertools.count()
_FIRST_CALLS: dict[str, float] = {}


class KernelSpec:
    """One generated kernel: `kind` "elementwise" or "reduction"; `name` the Python name of its object,
    `cname` its name in C (the kernel's, and its device function's prefix); `inputs`/`outputs` the (name,
    dtype) of its parameters; `body` the C of its device function `<cname>_body` (elementwise: inputs,
    then a reference per output) or `<cname>_map` (reduction: inputs -> the accumulator's value); for a
    reduction `reduce_expr`, `identity`, `reduce_type`, `axes` and `post_map` (CuPy's post-map statement:
    ``out0 = a``, or a call of the device function `<cname>_post` of a chain after the reduction)."""

    __slots__ = ("axes", "body", "cname", "identity", "inputs", "kind", "name", "outputs", "post_map", "reduce_expr",
                 "reduce_type", "summary")  # fmt: skip

    def __init__(self, **fields: Any):
        for k in self.__slots__:
            setattr(self, k, fields.get(k))

    @property
    def in_params(self) -> str:
        return ", ".join(f"{np.dtype(d).name} {n}" for n, d in self.inputs)

    @property
    def out_params(self) -> str:
        return ", ".join(f"{np.dtype(d).name} {n}" for n, d in self.outputs)

    @property
    def operation(self) -> str:
        """The statement of an elementwise kernel (CuPy's `operation`): the body into temporaries of
        the computing types (float for float16), then stored."""
        temps = [f"{c_source.CTYPE[np.dtype(d).name]} t_{n};" for n, d in self.outputs]
        call = f"{self.cname}_body({', '.join([n for n, _ in self.inputs] + [f't_{n}' for n, _ in self.outputs])});"
        return " ".join([*temps, call, *(f"{n} = t_{n};" for n, _ in self.outputs)])

    def declaration(self) -> str:
        """The Python that makes the kernel object (with `xp` the CuPy module)."""
        if self.kind == "elementwise":
            return (f"{self.name} = xp.ElementwiseKernel({self.in_params!r}, {self.out_params!r}, {self.operation!r}, "
                    f"{self.cname!r}, preamble=_PRELUDE + {self.name}_c)")  # fmt: skip
        post = self.post_map
        return (f"{self.name} = xp.ReductionKernel({self.in_params!r}, {self.out_params!r}, "
                f"{self.cname + '_map(' + ', '.join(n for n, _ in self.inputs) + ')'!r}, {self.reduce_expr!r}, {post!r}, "
                f"{self.identity!r}, {self.cname!r}, reduce_type={self.reduce_type!r}, preamble=_PRELUDE + {self.name}_c)")  # fmt: skip


_PLACEHOLDER = "ember_KERNEL"


def _named(spec: KernelSpec) -> KernelSpec:
    """`spec` with its C name made of a hash of its text: the same chain in any program is the same
    kernel source, which CuPy compiles once (its cache is keyed by the source)."""
    text = repr((spec.kind, spec.in_params, spec.out_params, spec.body, spec.reduce_expr, spec.identity, spec.reduce_type,
                 spec.post_map))  # fmt: skip
    spec.cname = f"ember_{hashlib.sha1(text.encode()).hexdigest()[:10]}"
    spec.body = spec.body.replace(_PLACEHOLDER, spec.cname)
    if spec.post_map is not None:
        spec.post_map = spec.post_map.replace(_PLACEHOLDER, spec.cname)
    return spec


def _statements(eqns: list[Any], env: dict[Any, str]) -> list[str]:
    """The C of `eqns`, one `const` local each, reading the C names `env` gives (which it extends)."""
    lines: list[str] = []
    for eqn in eqns:
        args = [env[v] if type(v).__name__ == "Var" else c_source.literal(v.value, v.aval.dtype) for v in eqn.inputs]
        out = eqn.outvars[0]
        if eqn.primitive.name == "broadcast_in_dim":  # NumPy-style: the same element
            env[out] = args[0]
            continue
        expr = c_source.expression(eqn, args)
        if expr == args[0] and type(eqn.inputs[0]).__name__ == "Var":
            env[out] = expr  # an identity (copy, stop_gradient, a convert to the same dtype)
            continue
        env[out] = f"v{len(lines)}"
        lines.append(f"  const {c_source.CTYPE[np.dtype(out.aval.dtype).name]} {env[out]} = {expr};  // {eqn.primitive.name}")
    return lines


def _kernel_spec(group: Group, name: str) -> KernelSpec:
    """The kernel of a fused group (Python name `name`): its device function's C, one `const` local per
    equation."""
    cname = _PLACEHOLDER  # named after the finished text (`_named`)
    env: dict[Any, str] = {}
    inputs = []
    for k, v in enumerate(group.inputs):
        env[v] = f"in{k}"
        inputs.append((f"in{k}", v.aval.dtype))
    lines = _statements(group.eqns, env)
    if not inputs and group.reduction is not None:
        inputs.append(("in0", np.dtype(bool)))  # unused: CuPy takes a reduction's shape from an operand
    params = [f"const {c_source.CTYPE[np.dtype(d).name]} {n}" for n, d in inputs]
    summary = " ".join(e.primitive.name for e in group.eqns)
    if group.reduction is None:
        outputs = [(f"out{k}", v.aval.dtype) for k, v in enumerate(group.outvars)]
        params += [f"{c_source.CTYPE[np.dtype(d).name]}& {n}" for n, d in outputs]
        lines += [f"  {n} = {env[v]};" for (n, _), v in zip(outputs, group.outvars)]
        head = f"__device__ __forceinline__ void {cname}_body({', '.join(params)}) {{"
        return _named(KernelSpec(kind="elementwise", name=name, cname=cname, inputs=inputs, outputs=outputs,
                                 summary=summary, body="\n".join([head, *lines, "}"]) + "\n"))  # fmt: skip
    red = group.reduction
    operand = red.inputs[0]
    reduce_expr, identity, acc = c_source.reduction(red)
    value = env[operand] if type(operand).__name__ == "Var" else c_source.literal(operand.value, operand.aval.dtype)
    head = f"__device__ __forceinline__ {acc} {cname}_map({', '.join(params)}) {{"
    lines.append(f"  return ({acc})({value});")
    body = [head, *lines, "}"]
    result = group.outvars[0]
    if group.post:  # the chain on each reduced value, after rounding it to the reduction's dtype
        reduced = red.outvars[0]
        out_ctype = c_source.CTYPE[np.dtype(result.aval.dtype).name]
        rounded = "ember_rh(a)" if np.dtype(reduced.aval.dtype).name == "float16" else "a"
        post_env = {reduced: "r"}
        post_lines = _statements(group.post, post_env)
        body += [f"__device__ __forceinline__ {out_ctype} {cname}_post(const {acc} a) {{",
                 f"  const {c_source.CTYPE[np.dtype(reduced.aval.dtype).name]} r = {rounded};", *post_lines,
                 f"  return {post_env[result]};", "}"]  # fmt: skip
    return _named(KernelSpec(kind="reduction", name=name, cname=cname, inputs=inputs, outputs=[("out0", result.aval.dtype)],
                      body="\n".join(body) + "\n", reduce_expr=reduce_expr, identity=identity,
                      post_map=f"out0 = {cname}_post(a)" if group.post else "out0 = a",
                      reduce_type=acc.replace("ember_c64", "thrust::complex<float>").replace("ember_c128", "thrust::complex<double>"),
                      axes=tuple(red.params["axes"]),
                      summary=" ".join([summary, red.primitive.name, *(e.primitive.name for e in group.post)]).strip()))  # fmt: skip


class Generated:
    """A program's generated module before it runs: `source` (the text, kernels' C included),
    `kernels` (their specs), `fn_name`, and the objects its names refer to: `ops` (kernels of
    unfused equations) and `consts` (values without a literal)."""

    __slots__ = ("consts", "fn_name", "kernels", "launches", "ops", "source")

    def __init__(self, source: str, kernels: list[KernelSpec], fn_name: str, ops: dict[str, Any], consts: dict[str, Any],
                 launches: int = 0):  # fmt: skip
        self.source, self.kernels, self.fn_name, self.ops, self.consts = source, kernels, fn_name, ops, consts
        self.launches = launches  # calls of kernels (generated or the backend's) per run


def generate(program: Any, kernel_for: Callable[[Any], Any] | None = None, name: str = "program",
             donated: Sequence[int] = ()) -> Generated:  # fmt: skip
    """The generated module of `program` (nothing is compiled; CuPy is not needed). The results of
    elementwise kernels go into the buffers of the inputs at `donated` (jit's donate_argnums) that they
    read for the last time, when shape and dtype match.

    >>> program = ember.jit(lambda x: enp.sum(enp.tanh(x * 2.0) + 1.0)).lower(enp.ones(3)).ir.program
    >>> gen = generate(program, name="f")
    >>> [(k.kind, k.summary) for k in gen.kernels]
    [('reduction', 'mul tanh add reduce_sum')]
    >>> print(gen.source.split("\\n\\n")[-1])
    def f(a):
        b = _k0(a, axis=(0,))  # mul tanh add reduce_sum
        return [b]
    <BLANKLINE>
    """
    namer = Namer(kernel_for, (n for n in _names() if n != "xp"))
    names = namer.names
    var_name, ops, consts, literals = namer.var_name, namer.ops, namer.consts, namer.literals
    name_of, param, op_name = namer.name_of, namer.param, namer.op_name
    kernels: list[KernelSpec] = []

    def donated_buffer(v: Any, group: Group, taken: set[Any]) -> Any:
        """A donated input this group reads for the last time, of `v`'s shape and dtype: written in place
        (each element is read before the same thread writes it), unless it is a strided or broadcast view."""
        for u in group.inputs:
            if u in free_donated and u not in taken and u.aval.shape == v.aval.shape == group.shape \
                    and u.aval.dtype == v.aval.dtype and last_group.get(u) is group:  # fmt: skip
                taken.add(u)
                return u
        return None

    def group_lines(group: Group) -> list[str]:
        spec = _kernel_spec(group, f"_k{len(kernels)}")
        kernels.append(spec)
        args = [name_of(v) for v in group.inputs]  # CuPy broadcasts each NumPy-style into the group's shape
        if spec.kind == "reduction":
            if tuple(np.broadcast_shapes(*(v.aval.shape for v in group.inputs), ())) != group.shape:
                if not args:  # (a reduction of constants) the unused operand `in0` gives the shape
                    args = [f"xp.zeros((), {literals.setdefault(repr(np.dtype(bool)), f'_l{len(literals)}')})"]
                args[0] = f"xp.broadcast_to({args[0]}, {group.shape})"
            var_name[group.outvars[0]] = next(names)
            return [f"    {var_name[group.outvars[0]]} = {spec.name}({', '.join(args)}, axis={spec.axes})  # {spec.summary}"]
        lines = []
        taken: set[Any] = set()
        for v in group.outvars:
            var_name[v] = next(names)
            dtype = literals.setdefault(repr(np.dtype(v.aval.dtype)), f"_l{len(literals)}")  # made once, not per call
            new = f"xp.empty({group.shape}, {dtype})"
            into = donated_buffer(v, group, taken)
            if into is not None:
                new = f"{var_name[into]} if {var_name[into]}.flags.c_contiguous else {new}"
            lines.append(f"    {var_name[v]} = {new}")
        outs = [var_name[v] for v in group.outvars]
        lines.append(f"    {spec.name}({', '.join([*args, *outs])})  # {spec.summary}")
        return lines

    for v in (*program.constvars, *program.invars):
        var_name[v] = next(names)
    fn_name = name if name.isidentifier() and not keyword.iskeyword(name) else "program"
    lines = [f"def {fn_name}({', '.join(var_name[v] for v in (*program.constvars, *program.invars))}):"]
    items = plan_groups(program)
    # Donated inputs only generated kernels read (an unfused kernel's result may be a view of its
    # operand) and the program does not return: written by the last group that reads them.
    free_donated = {program.invars[k] for k in donated} - set(program.outvars)
    last_group: dict[Any, Any] = {}
    for item in items:
        for v in item.inputs:
            if type(item) is Group and item.reduction is None:
                last_group[v] = item
            else:
                free_donated.discard(v)
    for item in items:
        if type(item) is Group:
            if item.outvars:
                lines += group_lines(item)
            continue
        eqn = item
        args = [name_of(v) for v in eqn.inputs]
        args += [f"{k}={param(val)}" for k, val in eqn.params.items()]
        call = f"{op_name(eqn.primitive)}({', '.join(args)})"
        lines.append(namer.assignment(eqn, call))
    returned = [name_of(v) if type(v).__name__ == "Var" else f"xp.asarray({name_of(v)})" for v in program.outvars]
    lines.append(f"    return [{', '.join(returned)}]")
    head = [f"{key} = {text}" for text, key in literals.items()]
    for spec in kernels:
        head += [f"{spec.name}_c = r'''", *spec.body.splitlines(), "'''", spec.declaration()]
    source = "\n".join([*head, "", *lines]) + "\n" if head else "\n".join(lines) + "\n"
    launches = sum(line.lstrip().startswith(("_k", "ops.")) or " = ops." in line or " = _k" in line for line in lines)
    return Generated(source, kernels, fn_name, ops, consts, launches)


def compile_program(program: Any, kernel_for: Callable[[Any], Callable[..., Any]], name: str = "program",
                    donated: Sequence[int] = (), *, xp: ModuleType) -> Compiled:  # fmt: skip
    """Generate and compile the function that runs `program` on CuPy buffers (`xp` is the CuPy module):
    it takes the constants' buffers, then the inputs', and returns the list of output buffers.
    `kernel_for(primitive)` gives the function that runs an unfused primitive on raw buffers (with its
    parameters as keywords). Elementwise kernels write their results into the buffers of the inputs at
    `donated` that they read for the last time (see `generate`); other results are new buffers from
    CuPy's pool, which reuses freed memory at once.

    Run with `xp=numpy`, only the Python is checked (no kernel is made without CuPy):

    >>> import numpy
    >>> program = ember.jit(lambda x: x * 2.0 + 1.0).lower(enp.ones(3)).ir.program
    >>> compiled = compile_program(program, lambda prim: None, xp=numpy)
    >>> print(compiled.source.split("\\n\\n")[-1])
    def program(a):
        b = xp.empty((3,), _l0)
        _k0(a, b)  # mul add
        return [b]
    <BLANKLINE>
    """
    gen = generate(program, kernel_for, name, donated)
    filename = f"<ember-cuda-jit-{next(_counter)}-{gen.fn_name}>"
    consts = {k: xp.asarray(v) if isinstance(v, np.ndarray) else v for k, v in gen.consts.items()}
    namespace = {"ops": SimpleNamespace(**gen.ops), "np": np, "xp": xp, "_PRELUDE": c_source.CUDA_HEADER + c_source.PRELUDE,
                 **_PARAM_NAMESPACE, **consts}  # fmt: skip
    if not hasattr(xp, "ElementwiseKernel"):  # (a text-only check: kernels need CuPy)
        namespace["xp"] = SimpleNamespace(ElementwiseKernel=_no_cupy, ReductionKernel=_no_cupy, empty=xp.empty,
                                          asarray=xp.asarray, broadcast_to=xp.broadcast_to)  # fmt: skip
    code = compile(gen.source, filename, "exec")
    exec(code, namespace)  # noqa: S102 - the generated program is the product
    linecache.cache[filename] = (len(gen.source), None, gen.source.splitlines(keepends=True), filename)
    fn = namespace[gen.fn_name]
    if hasattr(xp, "cuda") and graph_worthy(program, launches=gen.launches):
        fn = Graphed(fn, xp)
    return Compiled(_timed_first_call(fn, filename), gen.source, filename)


def _no_cupy(*args: Any, **kwargs: Any) -> Callable[..., Any]:
    def missing(*a: Any, **k: Any) -> Any:
        raise RuntimeError("generated CUDA kernels run on CuPy arrays: compile with xp=cupy")

    return missing


def _timed_first_call(fn: Callable[..., list], filename: str) -> Callable[..., list]:
    """`fn`, recording in `first_call_times()` how long its first call took (kernels compile then)."""

    def first(*buffers: Any) -> list:
        start = time.perf_counter()
        try:
            return fn(*buffers)
        finally:
            _FIRST_CALLS.setdefault(filename, time.perf_counter() - start)
            wrapper.call = fn

    def wrapper(*buffers: Any) -> list:
        return wrapper.call(*buffers)

    wrapper.call = first
    wrapper.__wrapped__ = fn
    return wrapper


def first_call_times() -> dict[str, float]:
    """Seconds each compiled program's first call took, by file name (the first call compiles its
    kernels, or loads them from CuPy's disk cache; on a GPU, launches are asynchronous, so this is
    the host's time).

    >>> isinstance(first_call_times(), dict)
    True
    """
    return dict(_FIRST_CALLS)
