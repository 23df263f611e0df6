"""The functional front end: JAX's transforms over plain NumPy code.

- ``derivatives``: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``, ``jacobian``,
  ``hessian``, ``trace``, ``stop_gradient``, ``custom_vjp`` (the tracing session that
  records a call and the engine, ``tracegrad.autodiff``, that differentiates it);
- ``jit``: the guarded specialisation cache and its lowering to a runtime;
- ``vmap``; ``control_flow`` (``fori_loop``, ``scan``, ``while_loop``, ``cond``);
  ``checkpoint``; ``implicit_diff`` (``custom_root``, ``custom_linear_solve``);
- ``pure_callback``; ``randomness`` (NumPy random draws in a traced function);
- the JAX surface beside them: ``tree_util``, ``flatten_util``, ``debug``,
  ``optimizers`` (importable as ``tracegrad.tree_util`` & co.).
"""
