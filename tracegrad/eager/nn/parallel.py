"""``tg.nn.parallel``: ``DataParallel`` as CPU PyTorch gives it (no accelerator: a
pass-through to the wrapped module, which it holds as ``module``, so that its state dict's
keys carry the ``module.`` prefix) and ``DistributedDataParallel``, which needs a process
group tracegrad never has."""
from __future__ import annotations

from .modules import Module

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]


class DataParallel(Module):
    """``module`` run as it is: with no accelerator there is nothing to split the batch
    over (``device_ids`` is ``[]``, as in PyTorch on a CPU-only machine)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = []

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(Module):
    """Refused as PyTorch refuses it without ``torch.distributed.init_process_group``
    (tracegrad has no process groups)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **kwargs):
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """PyTorch's functional form, which needs an accelerator."""
    raise RuntimeError("device type could not be determined")
