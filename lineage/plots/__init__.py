"""Plotly figure builders: pure functions, numpy in, ``go.Figure`` out (usable in Jupyter too).

One module per part of the story; everything is re-exported here so pages write ``plots.<builder>``.
"""

from lineage.plots.core import MAX_FRAMES, Panel, animated_heatmaps, color_range, frame_indices, play_controls, style

__all__ = ["MAX_FRAMES", "Panel", "animated_heatmaps", "color_range", "frame_indices", "play_controls", "style"]
