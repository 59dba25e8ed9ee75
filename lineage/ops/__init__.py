"""The ops: the one recurrence and the mechanisms built on it, as functions of tensors.

:mod:`~lineage.ops.recurrence` holds the one linear-memory recurrence in three forms (step by step, chunked,
parallel) and its minimal paper-shaped chunked reference; each stage's module (``linear_attention``, ``deltanet``,
``mamba2``, ``gla``, ``gated_deltanet``, ``kda``) maps its paper's parameters onto it. Softmax attention lives in
:mod:`~lineage.ops.softmax`, its cache in :mod:`~lineage.ops.kv_cache`, its IO and FLOP accounting in
:mod:`~lineage.ops.io_cost`. Ops import only the conventions at the package's top (checks, numerics, device).
"""
