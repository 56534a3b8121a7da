"""``ember.optim``: optimizers as pure ``init``/``update`` pairs over any pytree, step for step with torch.optim.

An optimizer is a ``GradientTransformation``; ``chain`` composes them (optax's design), and every
hyperparameter accepts a number or a schedule (a function of the step count kept in the state).

>>> import ember, ember.numpy as enp
>>> from ember import optim
>>> opt = optim.sgd(learning_rate=0.1)
>>> params = {'w': enp.array([1.0, -1.0])}
>>> state = opt.init(params)
>>> grads = ember.grad(lambda p: (p['w'] ** 2).sum())(params)
>>> updates, state = opt.update(grads, state, params)
>>> optim.apply_updates(params, updates)['w'].tolist()
[0.800000011920929, -0.800000011920929]
"""

from ember.optim import _base, _lbfgs, _more_optimizers, _optimizers, _schedules, _transforms
from ember.optim._base import *  # noqa: F403
from ember.optim._lbfgs import *  # noqa: F403
from ember.optim._more_optimizers import *  # noqa: F403
from ember.optim._optimizers import *  # noqa: F403
from ember.optim._schedules import *  # noqa: F403
from ember.optim._transforms import *  # noqa: F403

__all__ = [*_base.__all__, *_lbfgs.__all__, *_more_optimizers.__all__, *_optimizers.__all__, *_schedules.__all__,
           *_transforms.__all__]  # fmt: skip
