"""The PyTorch names over tracegrad's functional transforms: ``torch.func`` (``func.py``:
``grad``, ``vmap``, ``jacrev``, ``functional_call``, ...) and ``torch.jit``
(``script.py``: ``script``, ``trace``, ...), for programs that import tracegrad as torch.
They take and give eager tensors and modules and run on ``tracegrad/transforms``, so
they sit above both front ends (``tracegrad.func`` and ``tracegrad.jit.script`` are their
public names)."""
