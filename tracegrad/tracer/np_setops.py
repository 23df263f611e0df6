"""Set operations on traced values, NumPy's steps on top of the traced ``np.unique`` and
``np.sort``: ``isin`` (a traced boolean array: equality against every test element),
``intersect1d``, ``setdiff1d``, ``setxor1d``, ``union1d`` and the array API's
``unique_all``/``unique_counts``/``unique_inverse``/``unique_values``. Which entries
are equal is read at trace time (a guard, as in ``np.unique``); the values keep their
gradients. Integer and boolean arrays carry none: ``unique_*`` of those are NumPy's own
results on the value read (NumPy's order for ``unique_values`` is its hash order).
"""
from __future__ import annotations

import numpy as np
from numpy.lib import _arraysetops_impl as _sets

from ..errors import TraceError
from ..ir.source import where
from .np_base import as_array, concatenate, dtype_of, implements, known, reshape, shape_of

_arr = as_array


@implements(np.isin)
def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    element, test = _arr(element), np.ravel(_arr(test_elements))
    if kind not in (None, "sort", "table"):
        raise TraceError(f"Invalid kind: '{kind}'. Please use None, 'sort' or 'table'."
                         f"{where()}")
    if kind == "table" and (dtype_of(element).kind not in "iub"
                            or dtype_of(test).kind not in "iub"):
        raise TraceError(f"The 'table' method is only supported for boolean or integer "
                         f"arrays. Please select 'sort' or None for kind.{where()}")
    if shape_of(test)[0] == 0:
        hit = np.zeros(shape_of(element), bool)
    else:
        hit = np.any(reshape(element, tuple(shape_of(element)) + (1,)) == test, axis=-1)
    return ~hit if invert else hit


@implements(np.union1d)
def union1d(ar1, ar2):
    return np.unique(concatenate([np.ravel(_arr(ar1)), np.ravel(_arr(ar2))]))


@implements(np.setdiff1d)
def setdiff1d(ar1, ar2, assume_unique=False):
    a = np.ravel(_arr(ar1)) if assume_unique else np.unique(_arr(ar1))
    keep = known(isin(a, _arr(ar2), invert=True), "np.setdiff1d")
    return a[np.flatnonzero(keep)]


@implements(np.intersect1d)
def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    ar1, ar2 = _arr(ar1), _arr(ar2)
    if not assume_unique:
        if return_indices:
            ar1, ind1 = np.unique(ar1, return_index=True)
            ar2, ind2 = np.unique(ar2, return_index=True)
        else:
            ar1, ar2 = np.unique(ar1), np.unique(ar2)
    else:
        ar1, ar2 = np.ravel(ar1), np.ravel(ar2)
    aux = concatenate([ar1, ar2])
    order = np.argsort(aux, kind="stable")
    aux = np.take(aux, order)
    if shape_of(aux)[0] == 0:
        mask = np.zeros(0, bool)
    else:
        mask = known(aux[1:] == aux[:-1], "np.intersect1d")
    picked = np.flatnonzero(mask)
    int1d = aux[:-1][picked]
    if not return_indices:
        return int1d
    order = known(order, "np.intersect1d's order")
    i1 = order[:-1][picked]
    i2 = order[1:][picked] - shape_of(ar1)[0]
    if not assume_unique:
        i1 = known(ind1, "")[i1]
        i2 = known(ind2, "")[i2]
    return int1d, i1, i2


@implements(np.setxor1d)
def setxor1d(ar1, ar2, assume_unique=False):
    ar1, ar2 = _arr(ar1), _arr(ar2)
    if not assume_unique:
        ar1, ar2 = np.unique(ar1), np.unique(ar2)
    aux = concatenate([np.ravel(ar1), np.ravel(ar2)])
    if shape_of(aux)[0] == 0:
        return aux
    aux = np.sort(aux)
    differ = known(aux[1:] != aux[:-1], "np.setxor1d")
    flag = np.concatenate(([True], differ, [True]))
    return aux[np.flatnonzero(flag[1:] & flag[:-1])]


def _plain_if_integer(name, fn, x):
    """NumPy's result on the value of an integer or boolean array (no gradient)."""
    if dtype_of(x).kind in "iub":
        return fn(known(x, name))
    return None


@implements(np.unique_values)
def unique_values(x):
    x = _arr(x)
    plain = _plain_if_integer("np.unique_values", np.unique_values, x)
    return plain if plain is not None else np.unique(x, equal_nan=False)


@implements(np.unique_counts)
def unique_counts(x):
    x = _arr(x)
    plain = _plain_if_integer("np.unique_counts", np.unique_counts, x)
    if plain is not None:
        return plain
    return _sets.UniqueCountsResult(*np.unique(x, return_counts=True, equal_nan=False))


@implements(np.unique_inverse)
def unique_inverse(x):
    x = _arr(x)
    plain = _plain_if_integer("np.unique_inverse", np.unique_inverse, x)
    if plain is not None:
        return plain
    values, inverse = np.unique(x, return_inverse=True, equal_nan=False)
    return _sets.UniqueInverseResult(values, reshape(inverse, tuple(shape_of(x))))


@implements(np.unique_all)
def unique_all(x):
    x = _arr(x)
    plain = _plain_if_integer("np.unique_all", np.unique_all, x)
    if plain is not None:
        return plain
    values, index, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                               return_counts=True, equal_nan=False)
    return _sets.UniqueAllResult(values, index, reshape(inverse, tuple(shape_of(x))), counts)

