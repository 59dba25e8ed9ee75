"""Plotly figure builders: pure functions, numpy in, ``go.Figure`` out (usable in Jupyter too).

One module per part of the story; everything is re-exported here so pages write ``plots.<builder>``.
"""

from lineage.plots.core import (
    MAX_FRAMES,
    Panel,
    animated_heatmaps,
    animation_steps,
    color_range,
    frame_indices,
    heatmaps,
    play_controls,
    step_marker,
    style,
)
from lineage.plots.gated import (
    channel_retention,
    decay_mask_and_attention,
    gates_by_channel,
    mechanism_styles,
    over_time,
    retention_map,
    state_animation,
)
from lineage.plots.hybrid import bytes_by_layer_and_time, decode_bytes_animation, layer_schedule_strip
from lineage.plots.lab import (
    capacity_curves,
    needle_curves,
    overwrite_blend,
    overwrite_vectors,
    retention_figure,
    topic_switch_figure,
)
from lineage.plots.linear import (
    chunk_schedule,
    chunk_timing,
    delta_rule_steps,
    mixing,
    recall_and_norm,
    recall_by_age,
    write_and_state,
)
from lineage.plots.memory import (
    bandwidth_fraction,
    cache_vs_length,
    decode_time_vs_context,
    format_bytes,
    memory_by_stage,
    per_layer_bars,
)
from lineage.plots.real_size import run_summary, state_rows_over_run
from lineage.plots.softmax import (
    attention_growth,
    cache_traffic,
    io_bytes,
    kv_cache_growth,
    online_softmax,
    recompute_cost,
)
from lineage.plots.story import attention_story, crossover, decode_ratio_curves, story_memory
from lineage.plots.training import accuracy_sweep, mixer_title, training_curves

__all__ = ["MAX_FRAMES", "Panel", "animated_heatmaps", "color_range", "frame_indices", "play_controls", "style"]
__all__ += ["bandwidth_fraction", "cache_vs_length", "decode_time_vs_context", "format_bytes", "per_layer_bars"]
__all__ += ["memory_by_stage"]
__all__ += ["heatmaps", "step_marker"]
__all__ += [
    "channel_retention",
    "decay_mask_and_attention",
    "gates_by_channel",
    "mechanism_styles",
    "over_time",
    "retention_map",
]
__all__ += ["state_animation", "bytes_by_layer_and_time", "decode_bytes_animation", "layer_schedule_strip"]
__all__ += ["capacity_curves", "needle_curves", "overwrite_blend", "overwrite_vectors", "retention_figure"]
__all__ += ["topic_switch_figure"]
__all__ += ["animation_steps", "chunk_schedule", "chunk_timing", "delta_rule_steps", "mixing"]
__all__ += ["recall_and_norm", "recall_by_age", "write_and_state", "attention_growth", "cache_traffic"]
__all__ += ["io_bytes", "kv_cache_growth", "online_softmax", "recompute_cost"]
__all__ += ["accuracy_sweep", "mixer_title", "training_curves"]
__all__ += ["attention_story", "crossover", "decode_ratio_curves", "story_memory"]
__all__ += ["run_summary", "state_rows_over_run"]
