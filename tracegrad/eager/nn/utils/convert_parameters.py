"""``tg.nn.utils.convert_parameters``: parameters to one vector and back."""
from .clip import parameters_to_vector, vector_to_parameters

__all__ = ["parameters_to_vector", "vector_to_parameters"]
