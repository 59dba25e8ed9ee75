"""What the Memory lab's tests share: fixed stream settings, the fp64 "exact" bound, and the wrong mechanisms that
the mutation tests swap in (the delta rule replaced by an additive write, a gate removed, KDA's per-channel gate
replaced by its mean)."""

from __future__ import annotations

from lineage import lab
from lineage.ops.deltanet import deltanet
from lineage.ops.kda import kda
from lineage.ops.linear_attention import linear_attention

EXACT = 1e-6  # "exact" in fp64 (measured: ≤ 1e-7 for the softmax cache, ~1e-15 for the states)
ORTHO = lab.LabSettings(d_k=16, keys="orthogonal", noise=0.0, seed=0)
RANDOM = lab.LabSettings(d_k=16, keys="random", noise=0.0, seed=0)
DELTA = ("deltanet", "gated_deltanet", "kda", "hybrid")


def additive_instead_of_delta(q, k, v, beta, **kw):
    """DeltaNet with its delta rule replaced by an additive write (β ignored)."""
    return linear_attention(q, k, v, feature_map="identity", normalize=False, **kw)


def gdn_without_gate(q, k, v, g, beta, **kw):
    return deltanet(q, k, v, beta, **kw)


def kda_with_mean_gate(q, k, v, g, beta, **kw):
    """KDA whose per-channel gate is replaced by its mean over channels: one gate per head, Gated DeltaNet."""
    return kda(q, k, v, g.mean(dim=-1, keepdim=True).expand_as(g), beta, **kw)
