"""``rt.optim``: optimisers (``SGD``, ``Adam``, ``AdamW``, ``RMSprop``) that take the
``Gradients`` of ``loss.backward()``, learning-rate schedulers (``rt.optim.lr_scheduler``) and
gradient clipping over ``Gradients``."""
from . import lr_scheduler
from .adam import Adam, AdamW
from .clip import clip_grad_norm_, clip_grad_value_
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "lr_scheduler", "clip_grad_norm_",
           "clip_grad_value_"]
