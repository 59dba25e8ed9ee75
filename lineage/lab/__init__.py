"""Memory lab: every mechanism of the lineage on the same key–value stream, side by side.

One module per experiment (``lineage.lab.overwrite``, ``capacity``, ``topic_switch``, ``retention``, ``needle``),
their common parts in :mod:`lineage.lab.common` (who takes part, the stream, the gate rules, running every mechanism,
the measures) and the overview in :mod:`lineage.lab.report`; this package re-exports their public names, so
``lab.overwrite(...)`` is the experiment's function.

The stage pages show one mechanism at a time. Here each experiment streams key–value writes into all of them at
once, reads back with cues, and measures what came back, so each step's gain (and cost) is a number, not a claim:

1. :func:`overwrite`     a key is written with v1, later with v2. Which mechanisms return v2?
2. :func:`capacity`      store N pairs, N from 1 to well past d_k; recall error against N.
3. :func:`topic_switch`  a stream on topic A, then on topic B. Who forgets A, and does A interfere with B?
4. :func:`retention`     long-lived facts in slow key channels, short-lived ones in fast channels: KDA's
                         per-channel gate against Gated DeltaNet's single gate at the same average decay.
5. :func:`needle`        a needle written early, then more writes than the state can hold: pure KDA vs the hybrid.

The lab works at the level of the memory ops, not trained layers, so every number can be explained:

* Keys are unit vectors in d_k dimensions: "orthogonal" keys come in blocks of d_k orthonormal vectors (a fresh
  random basis per block, as orthogonal as N > d_k keys can be); "random" keys are independent unit vectors.
  Values are independent unit vectors in d_v = d_k dimensions, so an error of 1 means "nothing useful came back".
* A read uses a cue: the stored key, or with ``noise`` > 0 the normalised sum k + noise·ε, ε ~ N(0, I/d_k).
* The fixed-state mechanisms are every linear mechanism of :mod:`lineage.mechanisms`, their public ops called in
  their bare form (the table's ``bare`` arguments) with ``scale=1``, so S holds Σ k vᵀ exactly as in the
  recurrence. Linear attention uses ``feature_map="identity", normalize=False``: the pure additive outer-product
  memory, the same write as Mamba-2's with α = 1. (The published ELU+1 normalised form is available as
  ``"linear_attention_elu1"``: its positive features make every key overlap every other, so it returns an
  average of the stored values weighted by similarity; it is not in the default set.)
* Every cue reads after every write: each cue is one head of the op, all heads receive the same writes, and head
  r's query is cue r at every step, so o_t = S_tᵀ q_t is the read of cue r after t + 1 writes (see
  :func:`run_mechanisms`). One call per mechanism gives whole curves (recall against N, against time).
* Softmax attention is :func:`lineage.ops.softmax.softmax_attention` over the cache of writes with a sharp scale
  (``SHARP_SCALE``): retrieval by key match. Its memory grows with every write.
* Gates and write strengths follow explicit rules, never learned (:class:`Gates`): a constant α per write for the
  scalar gates (Mamba-2, Gated DeltaNet); for KDA a slow set of channels (α_slow) and a fast set whose α is chosen
  so that the mean log-decay over channels equals log α — the same average decay as Gated DeltaNet; a constant β
  for every delta-rule write; and, at a topic switch, one step with α = α_reset for every gated mechanism.
* The "hybrid" is a KDA memory plus a softmax-attention memory over the same stream, its read combined by one
  explicit rule: the softmax read when its largest attention weight is at least ``HYBRID_CONFIDENCE`` (it found
  one matching key), KDA's read otherwise. This is a memory-level stand-in for Kimi Linear's periodic softmax
  (MLA) layers: it pays for the full cache, where Kimi Linear pays for it in one layer of four.

Each experiment returns a frozen dataclass of numpy arrays and per-mechanism floats; :func:`summary` writes its
"what this shows" sentence from the numbers (thresholds are the named constants below) and :func:`table` puts the
numbers in a DataFrame. :func:`run_all` and :func:`comparison_table` give the one-row-per-mechanism overview.
Nothing here imports streamlit.
"""

from __future__ import annotations

from lineage.lab.capacity import (
    CAPACITY_GATES,
    CapacityResult,
    capacity,
    capacity_summary,
    capacity_table,
)
from lineage.lab.common import (
    BLEND_PART,
    CAPACITY_ERROR,
    DEFAULT_MECHANISMS,
    DEFAULT_SETTINGS,
    DTYPE,
    ELU1,
    FORGOTTEN,
    HYBRID,
    HYBRID_CONFIDENCE,
    INTERFERENCE,
    KEPT,
    KEY_KINDS,
    LOST,
    MARGIN,
    MAX_D_K,
    MAX_NOISE,
    MAX_PAIRS,
    MAX_TRIALS,
    MIN_D_K,
    MODE,
    RECENT_VS_OLD,
    RECOVERED,
    SHARP_SCALE,
    Gates,
    LabSettings,
    Participant,
    Reads,
    check_int,
    check_range,
    default_mechanisms,
    generator,
    join_names,
    label,
    make_cues,
    make_keys,
    make_values,
    mechanism_table,
    nearest_correct,
    participants,
    people_formats,
    people_number,
    recall_error,
    run_mechanisms,
    state_numbers,
)
from lineage.lab.needle import (
    NEEDLE_GATES,
    NeedleResult,
    needle,
    needle_summary,
    needle_table,
)
from lineage.lab.overwrite import (
    MAX_BETWEEN,
    OVERWRITE_GATES,
    OverwriteResult,
    overwrite,
    overwrite_summary,
    overwrite_table,
)
from lineage.lab.report import (
    LabReport,
    comparison_table,
    run_all,
    summary,
    table,
)
from lineage.lab.retention import (
    RECENT_READS,
    RETENTION_GATES,
    RetentionResult,
    retention,
    retention_summary,
    retention_table,
)
from lineage.lab.topic_switch import (
    TOPIC_GATES,
    TopicSwitchResult,
    topic_switch,
    topic_switch_summary,
    topic_switch_table,
)

__all__ = [
    "BLEND_PART",
    "CAPACITY_ERROR",
    "CAPACITY_GATES",
    "CapacityResult",
    "DEFAULT_MECHANISMS",
    "DEFAULT_SETTINGS",
    "DTYPE",
    "ELU1",
    "FORGOTTEN",
    "Gates",
    "HYBRID",
    "HYBRID_CONFIDENCE",
    "INTERFERENCE",
    "KEPT",
    "KEY_KINDS",
    "LOST",
    "LabReport",
    "LabSettings",
    "MARGIN",
    "MAX_BETWEEN",
    "MAX_D_K",
    "MAX_NOISE",
    "MAX_PAIRS",
    "MAX_TRIALS",
    "MIN_D_K",
    "MODE",
    "NEEDLE_GATES",
    "NeedleResult",
    "OVERWRITE_GATES",
    "OverwriteResult",
    "Participant",
    "RECENT_READS",
    "RECENT_VS_OLD",
    "RECOVERED",
    "RETENTION_GATES",
    "Reads",
    "RetentionResult",
    "SHARP_SCALE",
    "TOPIC_GATES",
    "TopicSwitchResult",
    "capacity",
    "capacity_summary",
    "capacity_table",
    "check_int",
    "check_range",
    "comparison_table",
    "default_mechanisms",
    "generator",
    "join_names",
    "label",
    "make_cues",
    "make_keys",
    "make_values",
    "mechanism_table",
    "nearest_correct",
    "people_formats",
    "people_number",
    "needle",
    "needle_summary",
    "needle_table",
    "overwrite",
    "overwrite_summary",
    "overwrite_table",
    "participants",
    "recall_error",
    "retention",
    "retention_summary",
    "retention_table",
    "run_all",
    "run_mechanisms",
    "state_numbers",
    "summary",
    "table",
    "topic_switch",
    "topic_switch_summary",
    "topic_switch_table",
]
