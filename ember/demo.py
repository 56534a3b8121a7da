"""`python -m ember.demo`: private training of a small MLP on handwritten digits.

Trains a 64-128-128-10 tanh MLP, built from ``ember.nn`` layers, on the
8x8 digits bundled in `ember/data/` with DP-SGD: each example's gradient clipped
to a norm bound and summed by `ember.privacy.clipped_grad` (the norms by the
"ghost norm" identity, so no per-example gradient of a weight matrix is formed),
Gaussian noise from `ember.privacy.add_noise`, then a step of
``ember.optim.adam``, the whole step compiled by `ember.jit`. Prints the test
accuracy, the privacy spent (epsilon at delta 1e-5, by `ember.privacy.epsilon`),
and what one step costs next to the same step with materialised per-example
gradients (``jit(vmap(grad))``, then clipping) and with a Python loop of `grad`
over the examples; saves a figure of the training curves and of the per-example
gradient norms before clipping.

The demo alone needs tqdm and matplotlib (`pip install "ember[demo]"`); the
library never imports them.

    python -m ember.demo                    # full run, figure to ./ember_demo.png
    python -m ember.demo --quick --out /tmp/demo.png
    python -m ember.demo --noise 0          # plain (non-private) clipped SGD
    python -m ember.demo --epochs 5 --save run.safetensors       # stop after 5 epochs, checkpointed
    python -m ember.demo --resume run.safetensors --epochs 20    # continue: the same run as never stopping
"""

from __future__ import annotations

import argparse
import gzip
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

import ember
import ember.numpy as enp
from ember import nn, optim, privacy
from ember.nn import functional as F

Params = nn.Sequential
SIZES = (64, 128, 128, 10)
TEST_FRACTION = 0.2
N_TRAIN = 1797 - round(1797 * TEST_FRACTION)


# --- data ---------------------------------------------------------------------------------------


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The 1,797 8x8 digit images bundled with ember (see ember/data/README.md).

    Returns:
        ``(images, labels)``: float32 pixels scaled to [0, 1], shape (1797, 64),
        and int32 labels 0-9, shape (1797,).

    >>> images, labels = load_digits()
    >>> images.shape, labels[:5].tolist()
    ((1797, 64), [0, 1, 2, 3, 4])
    """
    source = resources.files("ember").joinpath("data", "digits.csv.gz")
    with source.open("rb") as raw, gzip.open(raw, "rt") as text:
        table = np.loadtxt(text, delimiter=",", dtype=np.float32)
    return table[:, :-1] / 16.0, table[:, -1].astype(np.int32)


class Split(NamedTuple):
    x_train: ember.Array
    y_train: ember.Array  # one-hot, float32
    x_test: ember.Array
    y_test: ember.Array


def split_data(key: ember.Array, test_fraction: float = TEST_FRACTION) -> Split:
    """A train/test split of the digits, fixed by ``key``; labels one-hot encoded."""
    images, labels = load_digits()
    order = np.asarray(ember.random.permutation(key, len(labels)))
    n_test = round(len(labels) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    one_hot = np.eye(10, dtype=np.float32)[labels]
    return Split(enp.asarray(images[train]), enp.asarray(one_hot[train]),
                 enp.asarray(images[test]), enp.asarray(one_hot[test]))


# --- model --------------------------------------------------------------------------------------


def make_model(key: ember.Array, sizes: tuple[int, ...] = SIZES) -> nn.Sequential:
    """The MLP as ``ember.nn`` layers: Linear and Tanh alternating, initialised as PyTorch does.

    tanh rather than relu: bounded activations keep gradient norms, and so clipping, tame.

    >>> model = make_model(ember.random.key(0))
    >>> [name for name, _ in model.named_parameters()][:2], model(enp.zeros(64)).shape
    (['0.weight', '0.bias'], (10,))
    """
    keys = ember.random.split(key, len(sizes) - 1)
    layers: list[nn.Module] = []
    for k, n_in, n_out in zip(keys, sizes[:-1], sizes[1:]):
        layers += [nn.Linear(n_in, n_out, key=k), nn.Tanh()]
    return nn.Sequential(*layers[:-1])


def loss(model: nn.Sequential, x: ember.Array, y: ember.Array) -> ember.Array:
    """Cross-entropy of one example against its one-hot label ``y`` (a probability target)."""
    return F.cross_entropy(model(x), y)


def accuracy(model: nn.Sequential, x: ember.Array, y: ember.Array) -> float:
    return float(enp.mean(enp.argmax(model(x), axis=-1) == enp.argmax(y, axis=-1)))


# --- DP-SGD with ember.optim's Adam -------------------------------------------------------------

DELTA = 1e-5  # the delta of the (epsilon, delta) guarantee: below 1 / (number of training examples)


def clipped_sum(params: Params, x: ember.Array, y: ember.Array, clip: float) -> tuple[Params, ember.Array]:
    """The sum over the batch of each example's gradient clipped to norm ``clip``, and the norms before clipping.

    By `ember.privacy.clipped_grad`: the weights' per-example norms by the ghost-norm identity (from each
    layer's input and output gradient), the biases' from their (small) per-example gradients, then one
    backward pass of the loss weighted by ``min(1, clip / norm)``; no per-example weight gradient is formed.

    >>> model = make_model(ember.random.key(0))
    >>> grads, norms = clipped_sum(model, enp.ones((5, 64)), enp.eye(10)[:5], clip=1.0)
    >>> grads[0].weight.shape, norms.shape
    ((128, 64), (5,))
    """
    return privacy.clipped_grad(loss, clip, return_norms=True)(params, (x, y))


def _clip_and_sum(grads: Params, clip: float) -> tuple[Params, ember.Array]:
    """Materialised per-example gradients (batch axis first) clipped to norm ``clip`` and summed; and the norms."""
    leaves, treedef = ember.tree.flatten(grads)
    batch = leaves[0].shape[0]
    norms = enp.sqrt(sum(enp.sum(g.reshape(batch, -1) ** 2, axis=1) for g in leaves))
    factor = enp.minimum(1.0, clip / (norms + 1e-12))
    sums = [enp.tensordot(factor, g, axes=1) for g in leaves]
    return ember.tree.unflatten(treedef, sums), norms


# Every example's gradient at once: vmap over the batch axis of x and y, the parameters shared.
per_example_grads = ember.vmap(ember.grad(loss), in_axes=(None, 0, 0))


def materialised_clipped_sum(params: Params, x: ember.Array, y: ember.Array, clip: float) -> tuple[Params, ember.Array]:
    """`clipped_sum` the direct way: every per-example gradient formed by ``vmap(grad)``, then clipped."""
    return _clip_and_sum(per_example_grads(params, x, y), clip)


def looped_clipped_sum(params: Params, x: ember.Array, y: ember.Array, clip: float) -> tuple[Params, ember.Array]:
    """`clipped_sum` with a Python loop of ``grad`` over the examples: the baseline to beat."""
    one = ember.grad(loss)
    grads = [one(params, x[i], y[i]) for i in range(x.shape[0])]
    return _clip_and_sum(ember.tree.map(lambda *leaves: enp.stack(leaves), *grads), clip)


CLIPPING: dict[str, Callable[..., tuple[Params, ember.Array]]] = {
    "ghost": clipped_sum, "materialised": materialised_clipped_sum, "loop": looped_clipped_sum}


def train_step(params: Params, state: Any, x: ember.Array, y: ember.Array, key: ember.Array, *,
               lr: float, clip: float, noise: float,
               clipping: str = "ghost") -> tuple[Params, Any, ember.Array, ember.Array]:
    """One DP-SGD step with Adam: clipped per-example gradients summed, N(0, (noise * clip)^2) added to the sum,
    divided by the batch size. Returns the new parameters and optimizer state, the per-example losses and the
    per-example gradient norms before clipping. `clipping` picks how the clipped sum is computed (`CLIPPING`)."""
    grad_sum, norms = CLIPPING[clipping](params, x, y, clip)
    noisy = privacy.add_noise(grad_sum, key, noise_multiplier=noise, max_norm=clip)
    grad = ember.tree.map(lambda g: g / x.shape[0], noisy)
    updates, state = optim.adam(learning_rate=lr).update(grad, state, params)
    losses = ember.vmap(loss, in_axes=(None, 0, 0))(params, x, y)  # for the progress bar and the figure
    return optim.apply_updates(params, updates), state, losses, norms


# The step compiled: traced once (the hyperparameters are static: Python numbers in the trace).
jit_train_step = ember.jit(train_step, static_argnames=("lr", "clip", "noise", "clipping"))


def privacy_spent(steps: int, batch_size: int, n_train: int, noise: float) -> float:
    """Epsilon at `DELTA` after ``steps`` steps, by the RDP accountant of `ember.privacy.epsilon`.

    It counts each batch as drawn by Poisson sampling at rate ``batch_size / n_train``; the demo takes
    shuffled batches of a fixed size instead, which is the usual approximation (Opacus' and TF-Privacy's
    tutorials make it too).

    >>> round(privacy_spent(220, 128, 1438, 1.0), 2)  # the demo's 20 epochs
    10.21
    """
    return privacy.epsilon(steps, batch_size / n_train, noise, DELTA)


# --- the run ------------------------------------------------------------------------------------


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m ember.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=None, help="passes over the training set (default 20; 2 with --quick)")
    parser.add_argument("--batch-size", type=int, default=128, help="examples per step (default 128)")
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam's learning rate (default 3e-3)")
    parser.add_argument("--clip", type=float, default=1.0, help="per-example gradient norm bound C (default 1.0)")
    parser.add_argument("--noise", type=float, default=1.0,
                        help="noise multiplier: the noise's std is noise * C (default 1.0; 0 for no noise)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the split, the initialisation, batches and noise")
    parser.add_argument("--out", type=Path, default=Path("ember_demo.png"), help="where the figure goes")
    parser.add_argument("--quick", action="store_true", help="a reduced run of a few seconds (for tests)")
    parser.add_argument("--save", type=Path, default=None,
                        help="checkpoint the model, optimizer state, random key and epoch here after every epoch")
    parser.add_argument("--resume", type=Path, default=None,
                        help="continue from a --save checkpoint up to --epochs: the same run as never stopping")
    args = parser.parse_args(argv)
    if args.epochs is None:
        args.epochs = 2 if args.quick else 20
    if args.epochs < 1:
        parser.error(f"--epochs must be at least 1, not {args.epochs}")
    if not 1 <= args.batch_size <= N_TRAIN:
        parser.error(f"--batch-size must be between 1 and the {N_TRAIN} training examples, not {args.batch_size}")
    if args.clip <= 0 or args.noise < 0:
        parser.error("--clip must be positive and --noise non-negative")
    return args


def _compare_steps(params: Params, state: Any, x: ember.Array, y: ember.Array, key: ember.Array,
                   hp: dict[str, float], loop_repeat: int) -> dict[str, tuple[float, float, float]]:
    """Best-of seconds of a whole step and of its clipped gradient sum alone, three ways: (ghost norms under jit,
    materialised ``vmap(grad)`` under jit, a Python loop of ``grad``).

    They run interleaved, so that machine noise hits all alike; the fast sides get more tries.
    """
    clip = hp["clip"]
    ghost, materialised = ember.jit(clipped_sum, static_argnames="clip"), ember.jit(materialised_clipped_sum,
                                                                                     static_argnames="clip")
    cases = {
        "step": (lambda: jit_train_step(params, state, x, y, key, **hp),
                 lambda: jit_train_step(params, state, x, y, key, clipping="materialised", **hp),
                 lambda: train_step(params, state, x, y, key, clipping="loop", **hp)),
        "clipped_sum": (lambda: ghost(params, x, y, clip=clip), lambda: materialised(params, x, y, clip=clip),
                        lambda: looped_clipped_sum(params, x, y, clip)),
    }
    best = {name: [float("inf")] * 3 for name in cases}
    for round_ in range(loop_repeat + 8):
        for name, fns in cases.items():
            for i, fn in enumerate(fns[: 2 if round_ >= loop_repeat else 3]):
                start = time.perf_counter()
                fn()
                best[name][i] = min(best[name][i], time.perf_counter() - start)
    return {name: tuple(times) for name, times in best.items()}


# What a checkpoint must agree on to continue a run exactly: the data split, batches, noise and update.
_RUN = ("seed", "batch_size", "lr", "clip", "noise")


def _checkpoint(args: argparse.Namespace, params: Params, state: Any, key: ember.Array, epochs: int,
                history: dict[str, list]) -> None:  # fmt: skip
    """Save everything that decides the rest of the run to ``args.save`` (one safetensors file)."""
    ember.save(args.save, {
        "model": params, "opt_state": state, "key": key, "epochs_done": np.int32(epochs),
        "run": {name: np.float64(getattr(args, name)) for name in _RUN},
        "history": {"loss": np.asarray(history["loss"], np.float64), "norms": np.stack(history["norms"]),
                    "train_acc": np.asarray(history["train_acc"]), "test_acc": np.asarray(history["test_acc"])},
    })  # fmt: skip


def _resume(args: argparse.Namespace) -> tuple[Params, Any, ember.Array, int, dict[str, list]]:
    """The model, optimizer state, key, epochs done and history of a ``--save`` checkpoint."""
    saved = ember.load(args.resume)
    run = {name: float(value) for name, value in saved["run"].items()}
    if any(run[name] != float(getattr(args, name)) for name in _RUN):
        given = ", ".join(f"--{name.replace('_', '-')} {run[name]:g}" for name in _RUN)
        raise SystemExit(f"--resume {args.resume}: the checkpoint was made with {given}; pass the same to continue "
                         f"that run")
    done = int(saved["epochs_done"])
    if done >= args.epochs:
        raise SystemExit(f"--resume {args.resume}: the checkpoint has {done} epochs done; ask for more with --epochs")
    h = saved["history"]
    history = {"loss": np.asarray(h["loss"]).tolist(), "norms": list(np.asarray(h["norms"])),
               "train_acc": np.asarray(h["train_acc"]).tolist(), "test_acc": np.asarray(h["test_acc"]).tolist()}
    return saved["model"], saved["opt_state"], saved["key"], done, history


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the demo; returns the numbers it prints (for tests)."""
    args = _parse(argv)
    try:
        import matplotlib  # noqa: F401  (imported for use in _plot; checked here, before training)
        from tqdm import tqdm
    except ImportError as err:
        raise SystemExit(f"python -m ember.demo needs tqdm and matplotlib ({err}): "
                         'pip install "ember[demo]" (or -e ".[demo]" in a checkout)') from None
    key_split, key_init, key_train = ember.random.split(ember.random.key(args.seed), 3)
    data = split_data(key_split)
    n_train = data.x_train.shape[0]
    steps_per_epoch = n_train // args.batch_size
    print(f"ember {ember.__version__}: DP-SGD on the 8x8 digits ({n_train} train / {data.x_test.shape[0]} test), "
          f"MLP {'-'.join(map(str, SIZES))} (tanh), batch {args.batch_size}, {args.epochs} epochs, "
          f"clip C={args.clip}, noise multiplier {args.noise}")

    params = make_model(key_init)
    state = optim.adam(learning_rate=args.lr).init(params)
    hp = {"lr": args.lr, "clip": args.clip, "noise": args.noise}
    history: dict[str, list] = {"loss": [], "norms": [], "train_acc": [], "test_acc": []}
    first_epoch = 0
    if args.resume is not None:
        params, state, key_train, first_epoch, history = _resume(args)
    first_call = None
    bar = tqdm(total=args.epochs * steps_per_epoch, initial=first_epoch * steps_per_epoch, unit="step",
               dynamic_ncols=True)
    for epoch in range(first_epoch, args.epochs):
        key_epoch = ember.random.fold_in(key_train, epoch)
        order = ember.random.permutation(key_epoch, n_train)
        bar.set_description(f"epoch {epoch + 1}/{args.epochs}")
        for i in range(steps_per_epoch):
            idx = order[i * args.batch_size:(i + 1) * args.batch_size]
            key_noise = ember.random.fold_in(key_epoch, i + 1)
            start = time.perf_counter()
            params, state, losses, norms = jit_train_step(params, state, data.x_train[idx], data.y_train[idx],
                                                          key_noise, **hp)
            if first_call is None:
                first_call = time.perf_counter() - start
            history["loss"].append(float(enp.mean(losses)))
            history["norms"].append(np.asarray(norms))
            bar.set_postfix(loss=f"{history['loss'][-1]:.3f}")
            bar.update()
        history["train_acc"].append(accuracy(params, data.x_train, data.y_train))
        history["test_acc"].append(accuracy(params, data.x_test, data.y_test))
        bar.set_postfix(loss=f"{history['loss'][-1]:.3f}", test_acc=f"{history['test_acc'][-1]:.3f}")
        if args.save is not None:
            _checkpoint(args, params, state, key_train, epoch + 1, history)
    bar.close()

    # The same step with materialised per-example gradients, and with a Python loop of grad, on one batch.
    x, y = data.x_train[: args.batch_size], data.y_train[: args.batch_size]
    key_noise = ember.random.key(args.seed + 1)
    timings = _compare_steps(params, state, x, y, key_noise, hp, loop_repeat=1 if args.quick else 3)
    (step_g, step_m, step_l), (sum_g, sum_m, sum_l) = timings["step"], timings["clipped_sum"]
    steps = args.epochs * steps_per_epoch
    epsilon = privacy_spent(steps, args.batch_size, n_train, args.noise)

    print(f"test accuracy: {history['test_acc'][-1]:.1%} (train {history['train_acc'][-1]:.1%}, chance 10%)")
    print(f"privacy: (epsilon, delta) = ({epsilon:.2f}, {_short(DELTA)}) after {steps} steps at sampling rate "
          f"{args.batch_size / n_train:.4f} and noise multiplier {args.noise}"
          + (" (no noise: no privacy)" if args.noise == 0 else ""))
    if first_call is not None:
        print(f"first call of the jitted step (trace + compile + run): {first_call * 1e3:.0f} ms")
    print(f"time per step (batch {args.batch_size}): {step_g * 1e3:.1f} ms with clipped_grad (ghost norms), "
          f"{step_m * 1e3:.1f} ms with jit(vmap(grad)) + clipping (materialised), {step_l * 1e3:.1f} ms with a "
          f"Python loop of grad over the examples: {step_l / step_g:.1f}x speedup")
    print(f"  the clipped gradient sum alone: {sum_g * 1e3:.1f} ms with ghost norms, {sum_m * 1e3:.1f} ms "
          f"materialised, {sum_l * 1e3:.1f} ms with the loop: {sum_l / sum_g:.1f}x speedup")
    out = _plot(history, args, steps_per_epoch, epsilon)
    print(f"figure saved to {out}")
    return {"test_accuracy": history["test_acc"][-1], "epsilon": epsilon, "steps": steps, "step_s": step_g,
            "materialised_step_s": step_m, "loop_step_s": step_l, "figure": out, "model": params}


def _short(x: float) -> str:
    """1e-05 as 1e-5."""
    return f"{x:g}".replace("e-0", "e-").replace("e+0", "e+")


def _plot(history: dict[str, list], args: argparse.Namespace, steps_per_epoch: int, epsilon: float) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    norms = np.stack(history["norms"])  # (steps, batch)
    steps = np.arange(1, len(norms) + 1)
    epochs = np.arange(1, args.epochs + 1)
    fig, ((ax_loss, ax_acc), (ax_norm, ax_hist)) = plt.subplots(2, 2, figsize=(11, 7.5))
    title = (f"ember DP-SGD on 8x8 digits: clip C={args.clip}, noise multiplier {args.noise}, batch {args.batch_size}"
             f" ($\\varepsilon$ = {epsilon:.2f} at $\\delta$ = {_short(DELTA)})")
    fig.suptitle(title)

    ax_loss.plot(steps, history["loss"], lw=1)
    ax_loss.set(title="training loss (batch mean)", xlabel="step", ylabel="cross-entropy", yscale="log")

    ax_acc.plot(epochs, history["train_acc"], "o-", label="train")
    ax_acc.plot(epochs, history["test_acc"], "s-", label="test")
    ax_acc.set(title="accuracy", xlabel="epoch", ylabel="accuracy", ylim=(0, 1.02))
    ax_acc.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax_acc.legend(loc="lower right")

    lo, mid, hi = np.percentile(norms, [10, 50, 90], axis=1)
    ax_norm.fill_between(steps, lo, hi, alpha=0.3, label="10th-90th percentile")
    ax_norm.plot(steps, mid, lw=1, label="median")
    ax_norm.plot(steps, norms.max(axis=1), lw=0.6, color="grey", label="max")
    ax_norm.axhline(args.clip, color="red", ls="--", label=f"clip C={args.clip}")
    ax_norm.set(title="per-example gradient norms before clipping", xlabel="step", ylabel="L2 norm", yscale="log")
    ax_norm.legend(loc="upper right", fontsize="small")

    first, last = norms[:steps_per_epoch].ravel(), norms[-steps_per_epoch:].ravel()
    bins = np.geomspace(max(min(first.min(), last.min()), 1e-4), max(first.max(), last.max()), 40)
    ax_hist.hist(first, bins=bins, alpha=0.6, label="first epoch")
    ax_hist.hist(last, bins=bins, alpha=0.6, label="last epoch")
    ax_hist.axvline(args.clip, color="red", ls="--", label="clip C")
    ax_hist.set(title="distribution of per-example gradient norms", xlabel="L2 norm", ylabel="examples", xscale="log")
    ax_hist.legend(fontsize="small")

    fig.tight_layout()
    out = args.out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


if __name__ == "__main__":
    main()
