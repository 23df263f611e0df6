"""``tg.nn.Parameter`` and ``tg.nn.Module``.

A module keeps its parameters, buffers and submodules in three ordered dicts, filled by
``__setattr__`` as PyTorch's does, so that ``self.fc = Linear(...)`` is all a user writes
and ``parameters()``, ``state_dict()`` and ``repr`` find everything in definition order.
"""
from __future__ import annotations

from collections import OrderedDict, namedtuple
from functools import partial

import numpy as np

from ..tensor import Tensor
from ..tensor_base import BROKEN

_broken = BROKEN.get     # (bound once: Module.__call__ is hot)

__all__ = ["Parameter", "Module"]


class Parameter(Tensor):
    """A tensor that is a module's learnable state: it requires grad by default and a
    module that gets one as an attribute registers it. It shares ``data``'s memory."""

    __slots__ = ()   # Tensor has __slots__; an empty tuple keeps instances dict-free

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from ..creation import empty
            data = empty(0)
        arr = data._data if isinstance(data, Tensor) else np.asarray(data)
        p = object.__new__(cls)
        p._set_fields(arr)
        if requires_grad:
            p.requires_grad = True
        return p

    def __init__(self, data=None, requires_grad=True):
        pass    # everything is set in __new__; Tensor.__init__ would overwrite it

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        # copy.deepcopy / pickle: rebuild from a copy of the values, not from the slots
        # (which hold the tape's bookkeeping)
        return Parameter, (np.array(self._data, copy=True), self._requires_grad)


_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module:
    """Base class of layers and models: subclasses set attributes in ``__init__`` (after
    ``super().__init__()``) and define ``forward``."""

    training: bool

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    def __call__(self, *args, **kwargs):
        region = _broken()
        if region is not None and region.obj is not self:   # under a tg.compile graph break
            return region.call(self, args, kwargs)
        d = self.__dict__
        pre, post = d.get("_forward_pre_hooks"), d.get("_forward_hooks")
        if not pre and not post:
            return self.forward(*args, **kwargs)
        for hook in list((pre or {}).values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        out = self.forward(*args, **kwargs)
        for hook in list((post or {}).values()):
            result = hook(self, args, out)
            if result is not None:
                out = result
        return out

    # -- attribute registration ---------------------------------------------------------
    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep="_parameters")
            params[name] = value       # an existing name keeps its place, as in PyTorch
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if d.get("_modules") is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            d["_modules"][name] = value
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (torch.nn.Module or None expected)")
            d["_modules"][name] = None
        elif getattr(value, "_is_buffer", False):     # nn.Buffer(t): registered as a buffer
            if d.get("_buffers") is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self.register_buffer(name, value, persistent=value.persistent)
        elif d.get("_buffers") is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name, keep=None):
        """Drop ``name`` from the instance and from every group but ``keep`` (where the
        caller is about to set it, keeping its position)."""
        d = self.__dict__
        d.pop(name, None)
        for key in ("_parameters", "_buffers", "_modules"):
            if key != keep:
                d[key].pop(name, None)
        if keep != "_buffers":
            d["_non_persistent"].discard(name)

    def __getattr__(self, name):
        # only reached when normal lookup fails: parameters, buffers and submodules live
        # in their dicts, not in the instance __dict__
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            group = d.get(key)
            if group is not None and name in group:
                return group[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for key in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__[key]:
                del self.__dict__[key][name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def register_parameter(self, name, param):
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (torch.nn.Parameter or None required)")
        self._forget(name, keep="_parameters")
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (torch Tensor or None required)")
        if getattr(tensor, "_is_buffer", False) and type(tensor).__name__ == "Buffer":
            tensor = tensor._as_tensor()     # nn.Buffer: kept as the plain tensor it wraps
        self._forget(name, keep="_buffers")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._forget(name, keep="_modules")
        self._modules[name] = module

    register_module = add_module

    # -- traversal ------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, prefix + ("." if prefix else "") + name,
                                                remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, group, prefix, recurse, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mod_prefix, module in mods:
            for name, value in module.__dict__[group].items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield mod_prefix + ("." if mod_prefix else "") + name, value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target):
        module = self
        for part in target.split(".") if target else ():
            if part not in module._modules:
                raise AttributeError(f"{module._get_name()} has no attribute `{part}`")
            module = module._modules[part]
        return module

    def get_parameter(self, target):
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        if name not in module._parameters:
            raise AttributeError(f"{module._get_name()} has no parameter `{name}`")
        return module._parameters[name]

    def get_buffer(self, target):
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        if name not in module._buffers:
            raise AttributeError(f"{module._get_name()} has no buffer `{name}`")
        return module._buffers[name]

    def apply(self, fn):
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # -- modes and gradients ------------------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            _zero_grad(p, set_to_none)

    # -- dtype --------------------------------------------------------------------------------
    def to(self, *args, **kwargs):
        """Cast floating parameters and buffers in place (as PyTorch does): ``to(dtype)``,
        ``to(tensor)``, ``to(device)``, ``to(device, dtype)``, ``to(dtype=...)``. Devices are
        checked as ``Tensor.to`` checks them (everything lives on the CPU)."""
        dtype = _requested_dtype(args, kwargs)
        if dtype is None:
            return self
        if dtype.kind not in "fc":
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={_torch_dtype_name(dtype)}")
        return self._cast(lambda t: t.is_floating_point(), dtype)

    def _cast(self, which, dtype):
        for m in self.modules():
            for group in (m._parameters, m._buffers):
                for t in group.values():
                    if t is not None and which(t) and t.dtype != dtype:
                        t._data = t._data.astype(dtype)
                        t._input = None
                        t._grad = None if t._grad is None else t._grad.to(dtype)
        return self

    def double(self):
        return self.to(np.float64)

    def float(self):
        return self.to(np.float32)

    def half(self):
        return self.to(np.float16)

    def type(self, dst_type):
        return self.to(dst_type)

    def cpu(self):
        return self

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def share_memory(self):
        return self

    # -- hooks ----------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` before ``forward``; a non-None result replaces the
        arguments (a single value is wrapped in a tuple)."""
        return _add_hook(self, "_forward_pre_hooks", hook, prepend)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """``hook(module, args, output)`` after ``forward``; a non-None result replaces the
        output."""
        return _add_hook(self, "_forward_hooks", hook, prepend)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """``hook(state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` (``module`` first with ``with_module``) before
        ``load_state_dict`` reads the state dict (a copy, which the hook may change)."""
        if with_module:
            hook = partial(hook, self)
        return _add_hook(self, "_load_state_dict_pre_hooks", hook, False)

        # -- state ----------------------------------------------------------------------------------
    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """Parameters and persistent buffers by dotted name; the tensors share memory with
        the module's (as in PyTorch), detached unless ``keep_vars``."""
        out = OrderedDict() if destination is None else destination
        for mod_prefix, m in self.named_modules(prefix=prefix.rstrip(".")):
            dot = mod_prefix + ("." if mod_prefix else "")
            for name, p in m._parameters.items():
                if p is not None:      # (an uninitialized lazy parameter: itself)
                    out[dot + name] = p if keep_vars or _lazy(p) else p.detach()
            for name, b in m._buffers.items():
                if b is not None and name not in m._non_persistent:
                    out[dot + name] = b if keep_vars or _lazy(b) else b.detach()
        return out

    def load_state_dict(self, state_dict, strict=True, assign=False):
        state_dict = _run_load_pre_hooks(self, state_dict, strict)
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        for key, target in own.items():
            if key not in state_dict:
                continue
            src = state_dict[key]
            if target.is_sparse is True or getattr(src, "is_sparse", False) is True:
                src = src if src.is_sparse is True else src.detach()
            else:
                src = src._data if isinstance(src, Tensor) else np.asarray(src)
            if tuple(src.shape) != tuple(target.shape):
                errors.append(f"size mismatch for {key}: copying a param with shape "
                              f"{_size(src.shape)} from checkpoint, the shape in current model "
                              f"is {target.shape!r}.")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {self._get_name()}:\n\t"
                               + "\n\t".join(errors))
        for key, target in own.items():
            if key in state_dict:
                src = state_dict[key]
                if target.is_sparse is True or getattr(src, "is_sparse", False) is True:
                    from ..sparse_coo import load_into
                    load_into(target, src)
                    continue
                src = src._data if isinstance(src, Tensor) else np.asarray(src)
                np.copyto(target._data, src, casting="unsafe")
                target._vc.v += 1      # an in-place change, as copy_ under no_grad
        return _IncompatibleKeys(missing, unexpected)

    # -- printing -------------------------------------------------------------------------------
    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(m), 2) for key, m in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if len(extra_lines) == 1 and not child_lines:
            body = extra_lines[0]
        elif lines:
            body = "\n  " + "\n  ".join(lines) + "\n"
        return self._get_name() + "(" + body + ")"

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))


class _RemovableHandle:
    """What ``register_forward_hook`` returns: ``remove()`` takes the hook off."""

    _counter = 0

    def __init__(self, hooks):
        self._hooks = hooks
        self.id = _RemovableHandle._counter
        _RemovableHandle._counter += 1

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _add_hook(module, attr, hook, prepend):
    hooks = module.__dict__.get(attr)
    if hooks is None:
        hooks = OrderedDict()
        object.__setattr__(module, attr, hooks)
    handle = _RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def _lazy(t):
    return getattr(type(t), "_uninitialized", False)


def _run_load_pre_hooks(module, state_dict, strict):
    """The modules' load_state_dict pre-hooks, run (outermost first) on a copy of
    ``state_dict``; the error messages they add are raised as load_state_dict's."""
    if not any(m.__dict__.get("_load_state_dict_pre_hooks") for m in module.modules()):
        return state_dict
    state_dict = OrderedDict(state_dict)
    errors = []
    for prefix, m in module.named_modules():
        for hook in list(m.__dict__.get("_load_state_dict_pre_hooks", {}).values()):
            hook(state_dict, prefix + ("." if prefix else ""), {}, strict, [], [], errors)
    if errors:
        raise RuntimeError(f"Error(s) in loading state_dict for {module._get_name()}:\n\t"
                           + "\n\t".join(errors))
    return state_dict


def _requested_dtype(args, kwargs):
    """The dtype a ``Module.to`` call asks for, or None; device arguments go through
    ``Tensor.to`` on a probe, which accepts the CPU and refuses others as tensors do."""
    dtype = kwargs.get("dtype")
    for a in args:
        if isinstance(a, Tensor):
            dtype = a.dtype
        elif isinstance(a, (np.dtype, type)):
            dtype = a
        elif isinstance(a, str) and a not in ("cpu", "cuda", "mps", "meta") \
                and not a.startswith(("cuda:", "cpu:")):
            try:
                dtype = np.dtype(a)
            except TypeError:
                Tensor._plain(np.zeros(())).to(a)
        elif a is not None:
            Tensor._plain(np.zeros(())).to(a)     # a device: checked (and refused) there
            probe = getattr(a, "dtype", None)
            if probe is not None:
                dtype = probe
    devices = [a for a in args if isinstance(a, str) and a in ("cpu", "cuda", "mps", "meta")
               or isinstance(a, str) and a.startswith(("cuda:", "cpu:"))]
    if "device" in kwargs and kwargs["device"] is not None:
        devices.append(kwargs["device"])
    for dev in devices:
        Tensor._plain(np.zeros(())).to(dev)
    return None if dtype is None else np.dtype(dtype)


def _torch_dtype_name(dtype):
    return "torch." + np.dtype(dtype).name


def _size(shape):
    from ..tensor import Size
    return repr(Size(shape))


def _zero_grad(p, set_to_none):
    if p._grad is None:
        return
    if set_to_none:
        p._grad = None
    else:
        g = p._grad
        if g._tracer is not None:       # a gradient with history (create_graph=True)
            g = p._grad = g.detach()
        if type(g._data) is not np.ndarray:     # a tg.compile tracer: written in place
            g._data[...] = 0
        elif g._data.flags.writeable:
            g._data.fill(0)
            g._vc.v += 1
        else:       # a read-only (e.g. broadcast) gradient array: a fresh one
            g._data = np.zeros_like(g._data)
