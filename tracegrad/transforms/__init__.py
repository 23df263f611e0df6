"""The functional front end: JAX's transforms over plain NumPy code.

- ``tracing``: the tracing session every transform starts from (``_Traced``: a call
  recorded, its derivative looked up in the engine, ``tracegrad.autodiff``), ``trace``
  and ``stop_gradient``;
- ``reverse``: ``grad``, ``value_and_grad``, ``vjp``; ``forward``: ``jvp``;
  ``jacobians``: ``jacobian``, ``hessian`` (batched over one-hot seeds);
  ``custom_rules``: ``custom_vjp``;
- ``jit``: the guarded specialisation cache and its lowering to a runtime;
- ``vmap``; ``control_flow`` (``fori_loop``, ``scan``, ``while_loop``, ``cond``);
  ``checkpoint``; ``implicit_diff`` (``custom_root``, ``custom_linear_solve``);
- ``pure_callback``; ``randomness`` (NumPy random draws in a traced function);
- the JAX surface beside them: ``tree_util``, ``flatten_util``, ``debug``,
  ``optimizers`` (importable as ``tracegrad.tree_util`` & co.).
"""
