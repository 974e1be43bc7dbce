"""``rt.nn``: modules and layers (``Module``, ``Parameter``, ``Linear``, ``Conv2d``, ...),
initialisers (``rt.nn.init``) and stateless functions (``rt.nn.functional``)."""
from . import functional, init
from .activation import *  # noqa: F403
from .activation import __all__ as _act
from .attention import MultiheadAttention, TransformerEncoderLayer
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d
from .linear import Dropout, Dropout2d, Embedding, Flatten, Identity, Linear
from .module import Module, ModuleDict, ModuleList, Parameter, Sequential
from .normalization import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm, RMSNorm
from .pooling import (AdaptiveAvgPool2d, AdaptiveMaxPool2d, AvgPool2d, AvgPool3d, MaxPool2d,
                      MaxPool3d, MaxUnpool2d, Upsample)
from .recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer,
                          TransformerEncoder)

__all__ = ["functional", "init", "Module", "Parameter", "Sequential", "ModuleList", "ModuleDict",
           "Identity", "Linear", "Flatten", "Embedding", "Dropout", "Dropout2d", "Conv1d",
           "Conv2d", "ConvTranspose2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d",
           "Conv3d", "ConvTranspose3d", "MaxPool3d", "AvgPool3d",
           "AdaptiveMaxPool2d", "MaxUnpool2d", "Upsample",
           "BatchNorm1d", "BatchNorm2d", "LayerNorm", "GroupNorm", "RMSNorm",
           "MultiheadAttention", "TransformerEncoderLayer", "RNN", "LSTM", "GRU", "RNNCell",
           "LSTMCell", "GRUCell", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerDecoder", "Transformer"] + list(_act)
