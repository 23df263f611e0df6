"""``tg.nn.utils``: gradient clipping, parameters as one vector, and ``rnn`` helpers."""
from . import rnn
from .clip import (
    clip_grad_norm_,
    clip_grad_value_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "parameters_to_vector",
           "vector_to_parameters", "rnn"]
