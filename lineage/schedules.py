"""Layer schedules: which kind of layer sits at each depth of a stack.

A schedule is a tuple of layer kinds, bottom to top. The kinds are the mechanisms' own (``Mechanism.layer_kind`` in
:mod:`lineage.mechanisms`: "mha" for softmax attention, "mla", and one per linear-memory mechanism) plus "gqa"
(softmax attention with shared key/value heads, which only the cost catalogue sizes). The models
(:mod:`lineage.models.hybrid`, :mod:`lineage.models.lm`) build a stack from a schedule; the cost catalogue
(:mod:`lineage.measure.footprints`) sizes one; the stages (:mod:`lineage.stages`) name theirs. All three read the
schedules here, so the models never import the cost catalogue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from lineage.checks import positive_int
from lineage.mechanisms import linear_mechanisms

# Layer kinds, the linear ones from the table of mechanisms (lineage.mechanisms) as it stands at import.
LINEAR_KINDS = tuple(m.layer_kind for m in linear_mechanisms())  # keep a fixed state
# keep a cache that grows with the context: the softmax mechanisms' kinds, and "gqa" (MHA with shared K/V heads)
SOFTMAX_KINDS = ("mha", "gqa", "mla")
LAYER_KINDS = SOFTMAX_KINDS + LINEAR_KINDS

KIMI_LINEAR_MLA_LAYERS = (4, 8, 12, 16, 20, 24, 27)  # 1-based, config.json "full_attn_layers"


def layer_schedule(n_layers: int, base: str, at: Mapping[str, Iterable[int]] | None = None) -> tuple[str, ...]:
    """A per-layer kind schedule: ``base`` everywhere except the 1-based positions listed in ``at``.

    ``layer_schedule(27, "kda", {"mla": (4, 8, 12, 16, 20, 24, 27)})`` is Kimi Linear 48B's stack.
    """
    positive_int("n_layers", n_layers)
    for name, kind in (("base", base), *((f"at key {k!r}", k) for k in at or {})):
        if kind not in LAYER_KINDS:
            raise ValueError(f"{name} must be a layer kind, one of {', '.join(map(repr, LAYER_KINDS))}, got {kind!r}")
    kinds = [base] * n_layers
    for kind, positions in (at or {}).items():
        for p in positions:
            if isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= n_layers:
                raise ValueError(f"at[{kind!r}] positions must be 1-based ints in [1, {n_layers}], got {p!r}")
            kinds[p - 1] = kind
    return tuple(kinds)


def periodic_schedule(
    n_layers: int, every: int = 4, *, base: str = "kda", kind: str = "mla", include_last: bool = False
) -> tuple[str, ...]:
    """Every ``every``-th layer (1-based: every, 2·every, ...) is ``kind``, the rest ``base``.

    A 3:1 hybrid is ``every=4`` (the defaults: KDA with MLA every fourth layer). ``include_last`` also makes the
    final layer ``kind``, as in Kimi Linear 48B, whose 27 layers put MLA at 4, 8, ..., 24 and at 27.
    """
    positive_int("n_layers", n_layers)
    positive_int("every", every)
    positions = list(range(every, n_layers + 1, every))
    if include_last and n_layers not in positions:
        positions.append(n_layers)
    return layer_schedule(n_layers, base, {kind: positions})


# Kimi Linear 48B-A3B's 27 layers, built once: MLA at KIMI_LINEAR_MLA_LAYERS, KDA elsewhere.
KIMI_LINEAR_SCHEDULE = layer_schedule(27, "kda", {"mla": KIMI_LINEAR_MLA_LAYERS})
