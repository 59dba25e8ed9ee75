"""Attention Lineage: how language models store, update, forget and retrieve memory, as runnable PyTorch.

Conventions, stated once for the whole package:

* Tensors are ``[B, H, T, D]`` (batch, heads, time, head dim — PyTorch SDPA order). A linear-memory state is
  ``S: [B, H, K, V]`` per head, read as ``o_t = S_tᵀ (scale · q_t)`` with ``scale`` defaulting to ``K ** -0.5``.
* Gates are log-space: ``g: [B, H, T]`` (one scalar per head) or ``[B, H, T, K]`` (one per key channel), with
  α = exp(g) ≤ 1; ``beta: [B, H, T]`` in [0, 1].
* Every op: ``fn(q, k, v, [g], [beta], *, scale=None, initial_state=None, output_final_state=False,
  mode="chunk", chunk_size=None) -> (o, S_final | None)`` with ``mode`` "recurrent" | "chunk" | "parallel";
  ``chunk_size`` None is the device's (64 on a GPU, 32 on a CPU: :func:`lineage.recurrence.default_chunk_size`).
  Inputs of any float dtype; computation in fp32 (fp64 stays fp64); ``o`` comes back in ``v``'s dtype.
* Bad input raises ``ValueError`` / ``TypeError`` naming the argument, what was given and what is allowed.

Layers: :mod:`lineage.recurrence` (the one recurrence, three forms) → one module per stage (op + paper) →
:mod:`lineage.mechanisms` (the one table of mechanisms: paper, write rule, gate, layer options, colour, op) →
:mod:`lineage.layers` / :mod:`lineage.hybrid` (nn.Modules), :mod:`lineage.stages`, :mod:`lineage.footprints`,
:mod:`lineage.lab`, :mod:`lineage.verify`, :mod:`lineage.bench` (all derived from the table) →
:mod:`lineage.plots` (Plotly figures). Softmax attention's math is :mod:`lineage.softmax`, its cache
:mod:`lineage.kv_cache`, its IO and FLOP accounting :mod:`lineage.io_cost`.
"""

from lineage.deltanet import deltanet
from lineage.device import device_info, get_device
from lineage.gated_deltanet import gated_deltanet
from lineage.gla import gla
from lineage.kda import kda
from lineage.kv_cache import KVCache
from lineage.linear_attention import linear_attention
from lineage.mamba2 import mamba2, mamba2_ssd
from lineage.recurrence import MemoryTrace, chunk_memory, parallel_memory, recurrent_memory
from lineage.softmax import softmax_attention

__all__ = [
    "KVCache",
    "MemoryTrace",
    "chunk_memory",
    "deltanet",
    "device_info",
    "gated_deltanet",
    "get_device",
    "gla",
    "kda",
    "linear_attention",
    "mamba2",
    "mamba2_ssd",
    "parallel_memory",
    "recurrent_memory",
    "softmax_attention",
]
