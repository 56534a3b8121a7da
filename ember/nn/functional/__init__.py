"""``ember.nn.functional``: the functions behind the layers and the losses, with PyTorch's names and arguments.

Every function is written with ember's primitives, so it runs eagerly and under every transform.

>>> import ember.numpy as enp
>>> from ember.nn import functional as F
>>> F.relu(enp.array([-1.0, 2.0])).tolist()
[0.0, 2.0]
"""

from ember.nn.functional import (
    _activations,
    _attention,
    _conv,
    _distance,
    _dropout,
    _embedding,
    _linear,
    _losses,
    _normalization,
    _padding,
    _pooling,
)
from ember.nn.functional._activations import *  # noqa: F403
from ember.nn.functional._attention import *  # noqa: F403
from ember.nn.functional._conv import *  # noqa: F403
from ember.nn.functional._distance import *  # noqa: F403
from ember.nn.functional._dropout import *  # noqa: F403
from ember.nn.functional._embedding import *  # noqa: F403
from ember.nn.functional._linear import *  # noqa: F403
from ember.nn.functional._losses import *  # noqa: F403
from ember.nn.functional._normalization import *  # noqa: F403
from ember.nn.functional._padding import *  # noqa: F403
from ember.nn.functional._pooling import *  # noqa: F403

__all__ = [*_activations.__all__, *_attention.__all__, *_conv.__all__, *_distance.__all__, *_dropout.__all__,
           *_embedding.__all__, *_linear.__all__,
           *_losses.__all__, *_normalization.__all__, *_padding.__all__, *_pooling.__all__]  # fmt: skip
