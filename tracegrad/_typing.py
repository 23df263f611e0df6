"""Names the public signatures share, for type checkers and the API reference.

Type variables must exist at run time for ``typing.get_type_hints`` to resolve the
annotations (which ``from __future__ import annotations`` keeps as strings).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")       # the parameters of a transformed function, kept by the transform
R = TypeVar("R")         # a result passed through unchanged
T = TypeVar("T")

# A nested tuple / list / dict of arrays and numbers: what the transforms take and give.
PyTree = Any
# ``argnums``: one position or several (the result is then a tuple, one entry each).
ArgNums = int | Sequence[int]
