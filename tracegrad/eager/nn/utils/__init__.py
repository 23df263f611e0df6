"""``tg.nn.utils``: gradient clipping, parameters as one vector, ``rnn`` helpers,
parametrizations (``parametrize``, ``parametrizations``), the legacy ``weight_norm`` /
``spectral_norm`` hooks, conv/linear-BatchNorm fusion, ``skip_init`` and ``stateless``."""
from . import (
    convert_parameters,
    fusion,
    parametrizations,
    parametrize,
    rnn,
    stateless,
)
from .clip import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)
from .fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from .init_skipping import skip_init
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grads_with_norm_", "clip_grad_value_",
           "get_total_norm", "parameters_to_vector", "vector_to_parameters", "rnn",
           "parametrize", "parametrizations", "convert_parameters", "fusion", "stateless",
           "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights", "skip_init", "weight_norm", "remove_weight_norm",
           "spectral_norm", "remove_spectral_norm"]
