"""Attention Lineage: how language models store, update, forget and retrieve memory, as runnable PyTorch.

Conventions, stated once for the whole package:

* Tensors are ``[B, H, T, D]`` (batch, heads, time, head dim — PyTorch SDPA order). A linear-memory state is
  ``S: [B, H, K, V]`` per head, read as ``o_t = S_tᵀ (scale · q_t)`` with ``scale`` defaulting to ``K ** -0.5``.
* Gates are log-space: ``g: [B, H, T]`` (one scalar per head) or ``[B, H, T, K]`` (one per key channel), with
  α = exp(g) ≤ 1; ``beta: [B, H, T]`` in [0, 1].
* Every op: ``fn(q, k, v, [g], [beta], *, scale=None, initial_state=None, output_final_state=False,
  mode="chunk", chunk_size=None) -> (o, S_final | None)`` with ``mode`` "recurrent" | "chunk" | "parallel";
  ``chunk_size`` None is the device's (64 on a GPU, 32 on a CPU: :func:`lineage.ops.recurrence.default_chunk_size`).
  Inputs of any float dtype; computation in fp32 (fp64 stays fp64); ``o`` comes back in ``v``'s dtype. KDA (and
  Gated DeltaNet-2, :mod:`lineage.ops.gated_deltanet2`, after the article) also take ``gate_lower_bound`` (default
  None): Kimi K3's bound on how fast a channel forgets (:func:`lineage.ops.kda.bounded_gate`).
* Bad input raises ``ValueError`` / ``TypeError`` naming the argument, what was given and what is allowed.

Layers, from the bottom; a module imports only from its own layer and lower ones (docs/ARCHITECTURE.md):
conventions (:mod:`lineage.checks`, :mod:`lineage.numerics`, :mod:`lineage.device`) → :mod:`lineage.ops` (the one
recurrence, :mod:`lineage.ops.recurrence`; one module per stage; softmax attention and its cache) → the tables
(:mod:`lineage.mechanisms`, the one table of mechanisms; :mod:`lineage.schedules`; :mod:`lineage.stages`) →
:mod:`lineage.models` → :mod:`lineage.measure`, :mod:`lineage.lab` → :mod:`lineage.train` → :mod:`lineage.teach` →
:mod:`lineage.plots` (Plotly figures). ``python -m lineage`` (:mod:`lineage.__main__`) sits on top.
"""

import importlib

# The public ops, imported on first use (PEP 562): ``import lineage`` and ``python -m lineage --help`` do not wait for
# torch, and ``lineage.ops.kda(...)`` works as before.
_EXPORTS = {  # module -> the names it gives the package
    "lineage.ops.recurrence": ("MemoryTrace", "chunk_memory", "parallel_memory", "recurrent_memory"),
    "lineage.device": ("device_info", "get_device"),
    "lineage.ops.kv_cache": ("KVCache",),
    "lineage.ops.softmax": ("softmax_attention",),
    "lineage.ops.linear_attention": ("linear_attention",),
    "lineage.ops.deltanet": ("deltanet",),
    "lineage.ops.mamba2": ("mamba2", "mamba2_ssd"),
    "lineage.ops.gla": ("gla",),
    "lineage.ops.gated_deltanet": ("gated_deltanet",),
    "lineage.ops.kda": ("kda",),
}
_PUBLIC = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value  # once: later look-ups find it directly
        return value
    raise AttributeError(f"module 'lineage' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
