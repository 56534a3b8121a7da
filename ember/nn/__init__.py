"""``ember.nn``: neural-network modules as pytrees, with PyTorch's layers, names and numbers.

A module is an immutable dataclass whose arrays are pytree leaves, so a model goes straight into
``grad``, ``vmap`` and ``jit``. Layers take PyTorch's arguments and initialise as PyTorch does;
``nn.from_torch`` converts a ``torch.nn`` model with its weights.

>>> import ember, ember.numpy as enp
>>> from ember import nn
>>> model = nn.Sequential(nn.Linear(4, 8, key=ember.random.key(0)), nn.ReLU(), nn.Linear(8, 1, key=ember.random.key(1)))
>>> loss = lambda m, x: (m(x) ** 2).mean()
>>> grads = ember.grad(loss)(model, enp.ones((16, 4)))
>>> grads.layers[0].weight.shape
(8, 4)
"""

from ember.nn import (
    _activations,
    _attention,
    _containers,
    _conv,
    _dropout,
    _embedding,
    _linear,
    _losses,
    _module,
    _normalization,
    _padding,
    _pooling,
    _recurrent,
    _state,
    _torch,
    _transformer,
    _tree,
    functional,
    init,
)
from ember.nn._activations import *  # noqa: F403
from ember.nn._attention import *  # noqa: F403
from ember.nn._containers import *  # noqa: F403
from ember.nn._conv import *  # noqa: F403
from ember.nn._dropout import *  # noqa: F403
from ember.nn._embedding import *  # noqa: F403
from ember.nn._linear import *  # noqa: F403
from ember.nn._losses import *  # noqa: F403
from ember.nn._module import *  # noqa: F403
from ember.nn._normalization import *  # noqa: F403
from ember.nn._padding import *  # noqa: F403
from ember.nn._pooling import *  # noqa: F403
from ember.nn._recurrent import *  # noqa: F403
from ember.nn._state import *  # noqa: F403
from ember.nn._torch import *  # noqa: F403
from ember.nn._transformer import *  # noqa: F403
from ember.nn._tree import *  # noqa: F403

__all__ = ["functional", "init", *_activations.__all__, *_attention.__all__, *_containers.__all__,
           *_conv.__all__, *_dropout.__all__, *_embedding.__all__, *_linear.__all__, *_losses.__all__,
           *_module.__all__, *_normalization.__all__, *_padding.__all__, *_pooling.__all__,
           *_recurrent.__all__, *_state.__all__, *_torch.__all__, *_transformer.__all__, *_tree.__all__]  # fmt: skip
