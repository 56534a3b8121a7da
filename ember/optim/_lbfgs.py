"""L-BFGS, iterate for iterate with ``torch.optim.LBFGS`` (its history handling and strong-Wolfe line search).

L-BFGS evaluates the objective many times per step, so it is not a ``GradientTransformation``:
``opt = optim.lbfgs(...)`` has ``init(params)`` and ``step(fun, params, state) -> (params, state, loss)``,
where ``fun(params)`` returns the scalar loss (``torch.optim.LBFGS.step(closure)``'s closure) and the
gradients come from ``ember.value_and_grad``. The step is an eager Python loop, as torch's is; the
arithmetic runs in NumPy on the parameters flattened into one vector, in their dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import ember.numpy as enp
from ember.core.pytree import tree_flatten, tree_unflatten
from ember.errors import ArgumentTypeError, InvalidArgumentError
from ember.optim._base import learning_rate_of
from ember.transforms.autodiff import value_and_grad

__all__ = ["LBFGS", "LBFGSState", "lbfgs"]


def _cubic_interpolate(x1: Any, f1: Any, g1: Any, x2: Any, f2: Any, g2: Any, bounds: tuple | None = None) -> Any:
    """The minimiser of the cubic through two points with slopes, clipped to ``bounds`` (torch's, from minFunc)."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(obj_func: Callable, x: np.ndarray, t: Any, d: np.ndarray, f: float, g: np.ndarray, gtd: Any,
                  c1: float = 1e-4, c2: float = 0.9, tolerance_change: float = 1e-9, max_ls: int = 25,
                  ) -> tuple[float, np.ndarray, Any, int]:  # fmt: skip
    """A step length satisfying the strong Wolfe conditions along ``d`` (torch's ``_strong_wolfe``)."""
    d_norm = np.abs(d).max()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = g_new.dot(d)

    # bracket an interval containing a point satisfying the Wolfe criteria
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    bracket_gtd: list = []
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        # extrapolate with a cubic, between 1.01 t and 10 t
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new, gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1

    if ls_iter == max_ls:  # reached the most evaluations allowed
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom: refine the bracket until a point satisfies the criteria
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        # a point too close to the bracket's ends makes little progress: move it 10% of the way in
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False

        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1

        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new, gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos], bracket_gtd[high_pos] = bracket_g[low_pos], bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new, gtd_new

    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


class LBFGSState(NamedTuple):
    """``lbfgs``'s state, torch's: evaluation and iteration counts, the last direction ``d`` and step ``t``,
    the curvature history (``old_dirs`` y, ``old_stps`` s, ``ro`` 1/y.s), ``H_diag`` and the previous
    gradient and loss. Vectors are flat NumPy arrays of the parameters' dtype; ``None`` before the first step.
    """

    func_evals: int
    n_iter: int
    d: np.ndarray | None
    t: Any
    old_dirs: tuple
    old_stps: tuple
    ro: tuple
    H_diag: Any
    prev_flat_grad: np.ndarray | None
    prev_loss: float | None


class LBFGS(NamedTuple):
    """An L-BFGS optimizer: ``init(params) -> state``; ``step(fun, params, state) -> (params, state, loss)``."""

    init: Callable[[Any], LBFGSState]
    step: Callable[[Callable, Any, LBFGSState], tuple[Any, LBFGSState, Any]]


def lbfgs(learning_rate: float | None = None, max_iter: int = 20, max_eval: int | None = None,
          tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
          line_search_fn: str | None = None, *, lr: float | None = None) -> LBFGS:  # fmt: skip
    """L-BFGS, as ``torch.optim.LBFGS``: the same iterates, history and strong-Wolfe line search.

    ``step(fun, params, state)`` runs up to ``max_iter`` iterations on ``fun(params) -> scalar loss`` (the
    closure of torch's ``step``) and returns ``(params, state, loss)`` with ``loss`` the value at the
    parameters it started from, as torch's ``step`` returns. Gradients come from ``ember.value_and_grad``;
    ``params`` is any pytree of floating arrays (``None`` leaves are left alone). Eager only: the loop
    decides on concrete values.

    Args:
      learning_rate: the step length (default 1); PyTorch's ``lr=`` is accepted too.
      max_iter: the most iterations per ``step``.
      max_eval: the most evaluations of ``fun`` per ``step`` (default ``max_iter * 5 // 4``).
      tolerance_grad: stop when the largest gradient element is at most this.
      tolerance_change: stop when the loss or the parameters change less than this.
      history_size: how many curvature pairs to keep.
      line_search_fn: ``None`` (fixed steps) or ``"strong_wolfe"``.

    Returns:
      An ``LBFGS`` with ``init`` and ``step``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> def rosenbrock(p):
    ...     return (1 - p['x'][0]) ** 2 + 100 * (p['x'][1] - p['x'][0] ** 2) ** 2
    >>> opt = optim.lbfgs(line_search_fn="strong_wolfe")
    >>> params = {'x': enp.array([-1.5, 2.0])}
    >>> state = opt.init(params)
    >>> for _ in range(3):
    ...     params, state, loss = opt.step(rosenbrock, params, state)
    >>> [round(v, 4) for v in params['x'].tolist()]
    [1.0, 1.0]
    """
    learning_rate = learning_rate_of("lbfgs", learning_rate, lr, default=1)
    if callable(learning_rate):
        raise InvalidArgumentError("optim.lbfgs: the learning rate must be a number (a schedule needs a step "
                                   "count, and L-BFGS counts iterations itself)")
    lr_value = float(learning_rate)
    for name, value in (("max_iter", max_iter), ("history_size", history_size)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise InvalidArgumentError(f"optim.lbfgs: {name} must be a positive integer, got {value!r}")
    if max_eval is None:
        max_eval = max_iter * 5 // 4
    elif not isinstance(max_eval, (int, np.integer)) or max_eval < 1:
        raise InvalidArgumentError(f"optim.lbfgs: max_eval must be a positive integer or None, got {max_eval!r}")
    if line_search_fn not in (None, "strong_wolfe"):
        raise InvalidArgumentError(f"optim.lbfgs: line_search_fn must be None or 'strong_wolfe', "
                                   f"got {line_search_fn!r}")

    def init(params: Any) -> LBFGSState:
        _flatten("init", params)  # checks the parameters
        return LBFGSState(0, 0, None, None, (), (), (), 1, None, None)

    def step(fun: Callable, params: Any, state: LBFGSState) -> tuple[Any, LBFGSState, Any]:
        if not callable(fun):
            raise ArgumentTypeError(f"optim.lbfgs: step(fun, params, state) needs the objective first, a function "
                                    f"of the parameters returning the loss; got {type(fun).__name__}")
        if not isinstance(state, LBFGSState):
            raise ArgumentTypeError(f"optim.lbfgs: step's state must be the LBFGSState that init or step returned, "
                                    f"got {type(state).__name__}")
        x, unflatten = _flatten("step", params)
        loss_and_grad = value_and_grad(fun)
        _, treedef = tree_flatten(params)

        def evaluate(flat: np.ndarray) -> tuple[Any, np.ndarray]:
            value, grads = loss_and_grad(unflatten(flat))
            if np.ndim(value) != 0:
                raise InvalidArgumentError(f"optim.lbfgs: fun must return a scalar loss, got shape "
                                           f"{np.shape(value)}")
            grad_leaves, grad_treedef = tree_flatten(grads)
            if grad_treedef != treedef:
                raise InvalidArgumentError(f"optim.lbfgs: the gradients' structure {grad_treedef} differs from "
                                           f"the parameters' {treedef}")
            return value, np.concatenate([np.asarray(g, dtype=x.dtype).ravel() for g in grad_leaves])

        func_evals, total_iter = state.func_evals, state.n_iter
        d, t, H_diag = state.d, state.t, state.H_diag
        old_dirs, old_stps, ro = list(state.old_dirs), list(state.old_stps), list(state.ro)
        prev_flat_grad, prev_loss = state.prev_flat_grad, state.prev_loss

        orig_loss, flat_grad = evaluate(x)
        loss = float(orig_loss)
        current_evals = 1
        func_evals += 1
        opt_cond = np.abs(flat_grad).max() <= tolerance_grad

        def done() -> tuple[Any, LBFGSState, Any]:
            new_state = LBFGSState(func_evals, total_iter, d, t, tuple(old_dirs), tuple(old_stps), tuple(ro),
                                   H_diag, prev_flat_grad, prev_loss)
            return unflatten(x), new_state, orig_loss

        if opt_cond:  # already optimal
            return done()

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            total_iter += 1

            # the direction: steepest descent first, then the two-loop recursion over the history
            if total_iter == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                num_old = len(old_dirs)
                al = [None] * num_old
                q = -flat_grad
                for i in range(num_old - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q = q - al[i] * old_dirs[i]
                r = q * H_diag
                for i in range(num_old):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r = r + (al[i] - be_i) * old_stps[i]
                d = r

            prev_flat_grad = flat_grad.copy()
            prev_loss = loss

            # the step length
            if total_iter == 1:
                t = min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr_value
            else:
                t = lr_value
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:  # not a descent direction
                break

            ls_func_evals = 0
            if line_search_fn == "strong_wolfe":
                def obj_func(x0: np.ndarray, t: Any, d: np.ndarray) -> tuple[float, np.ndarray]:
                    value, g = evaluate(x0 + t * d)
                    return float(value), g

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(obj_func, x, t, d, loss, flat_grad, gtd,
                                                                  max_ls=max_eval - current_evals)
                x = x + t * d
                opt_cond = np.abs(flat_grad).max() <= tolerance_grad
            else:
                x = x + t * d
                if n_iter != max_iter:
                    # re-evaluate, except after the last iteration (torch saves that evaluation)
                    value, flat_grad = evaluate(x)
                    loss = float(value)
                    opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            func_evals += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if np.abs(d * t).max() <= tolerance_change:  # no progress along the path
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        return done()

    return LBFGS(init, step)


def _flatten(where: str, params: Any) -> tuple[np.ndarray, Callable[[np.ndarray], Any]]:
    """``params``'s leaves as one flat NumPy vector (their common dtype), and the inverse."""
    leaves, treedef = tree_flatten(params)
    arrays = [np.asarray(leaf) for leaf in leaves]
    if not arrays:
        raise InvalidArgumentError(f"optim.lbfgs: {where} got no parameters (the pytree has no array leaves)")
    for a in arrays:
        if not np.issubdtype(a.dtype, np.floating):
            raise InvalidArgumentError(f"optim.lbfgs: {where}: the parameters must be real floating arrays, got a "
                                       f"{a.dtype} leaf; pass floats (or leave it out as None)")
    dtype = np.result_type(*arrays)
    shapes = [a.shape for a in arrays]
    dtypes = [a.dtype for a in arrays]
    sizes = np.cumsum([a.size for a in arrays])[:-1]

    def unflatten(flat: np.ndarray) -> Any:
        parts = np.split(flat, sizes)
        return tree_unflatten(treedef, [enp.asarray(p.reshape(s).astype(dt)) for p, s, dt in
                                        zip(parts, shapes, dtypes)])  # fmt: skip

    return np.concatenate([a.astype(dtype).ravel() for a in arrays]), unflatten
