"""``tg.nn.utils.stateless``: calling a module with other tensors for its parameters and
buffers (``torch.func.functional_call`` is this module's ``_functional_call``), and the
deprecated ``functional_call`` name."""
from __future__ import annotations

import warnings

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """``torch.func.functional_call``, with PyTorch's FutureWarning that this name is
    deprecated."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)


def _functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                     tie_weights=True, strict=False):
    """``torch.func.functional_call``: ``module(*args, **kwargs)`` with its parameters and
    buffers named in ``parameter_and_buffer_dicts`` (a dict, or a tuple/list of dicts)
    replaced by the given tensors for this call only. Names the dicts leave out keep the
    module's own tensors (``strict=True`` refuses missing or unexpected names); with
    ``tie_weights`` a tensor given for one name of a tied parameter is used for all of its
    names. An in-place update of a buffer (BatchNorm's running statistics in training)
    goes to the tensor given for it."""
    if isinstance(parameter_and_buffer_dicts, dict):
        values = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, (tuple, list)):
        seen, values = {}, {}
        for d in parameter_and_buffer_dicts:
            if not isinstance(d, dict):
                raise ValueError(f"Expected all elements of parameter_and_buffer_dicts to be "
                                 f"dictionaries but got {type(d)}")
            repeated = [k for k in d if k in seen]
            if repeated:
                raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                                 f"functional call is ambiguous")
            seen.update(d)
            values.update(d)
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple "
                         f"of dicts, but got {type(parameter_and_buffer_dicts)}")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    if kwargs is None:
        kwargs = {}
    if tie_weights:
        values = _tied(module, values)
    if strict:
        own = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
              {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing = sorted(own - set(values))
        unexpected = sorted(set(values) - own)
        if missing or unexpected:
            lines = []
            if unexpected:
                lines.append(f"\tUnexpected key(s): {', '.join(map(repr, unexpected))}.")
            if missing:
                lines.append(f"\tMissing key(s): {', '.join(map(repr, missing))}.")
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n"
                               + "\n".join(lines))
    swapped = []
    try:
        for name, value in values.items():
            owner, _, leaf = name.rpartition(".")
            sub = module.get_submodule(owner) if owner else module
            d = sub.__dict__
            for group in ("_parameters", "_buffers"):
                if leaf in d[group]:
                    swapped.append((d[group], leaf, d[group][leaf]))
                    d[group][leaf] = value
                    break
            else:
                # (a name that is neither: set as a plain attribute for the call, as torch)
                swapped.append((d, leaf, d.get(leaf, _ABSENT)))
                d[leaf] = value
        return module(*args, **kwargs)
    finally:
        for group, leaf, old in reversed(swapped):
            if old is _ABSENT:
                group.pop(leaf, None)
            else:
                group[leaf] = old


_ABSENT = object()


def _tied(module, values):
    """``values`` with every name of a tied parameter or buffer given the tensor passed
    for one of its names."""
    names_of = {}
    for n, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        names_of.setdefault(id(t), []).append(n)
    out = dict(values)
    for names in names_of.values():
        if len(names) < 2:
            continue
        given = [n for n in names if n in values]
        if not given:
            continue
        first = values[given[0]]
        if any(values[n] is not first for n in given[1:]):
            raise ValueError(f"functional_call got multiple values for keys {given}, which "
                             f"are tied. Consider using tie_weights=False")
        for n in names:
            out[n] = first
    return out
