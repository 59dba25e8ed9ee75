"""Figures for the softmax family: GPT-2 recomputing its prefix, the KV cache, FlashAttention's tiles.

Pure builders: numpy in, ``go.Figure`` out. Attention weights are fractions, drawn on the fixed range [0, 1]; keys,
values and scores are signed and centred on zero. Steps are 0-based (step t is the (t+1)-th token), as on every
other page.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lineage.plots.core import (
    ATTENTION_HOVER,
    Panel,
    animated_heatmaps,
    animation_steps,
    axis_refs,
    checked_array,
    figure,
    house_layout,
    step_marker,
    subplot_grid,
)
from lineage.plots.memory import format_bytes
from lineage.plots.palette import GROWS, series_line

UNIT = (0.0, 1.0)  # attention weights
RECOMPUTE, CACHED = "without a cache (GPT-2 recompute)", "with a KV cache"


def _grown(full: np.ndarray, steps: np.ndarray, axis: int) -> np.ndarray:
    """[len(steps), ...] copies of ``full`` with entries past each step along ``axis`` blanked (NaN)."""
    idx = np.arange(full.shape[axis])
    shape = [1] * full.ndim
    shape[axis] = -1
    visible = idx.reshape(shape)[None] <= steps.reshape((-1,) + (1,) * full.ndim)
    return np.where(visible, full[None], np.nan).astype(np.float32)


def _causal(attn: np.ndarray) -> np.ndarray:
    """Blank the keys a query cannot see (s > t): masked out, which is not the same as a weight of zero."""
    return np.where(np.tri(attn.shape[0], dtype=bool), attn, np.nan)


def attention_growth(attn: np.ndarray, *, start: int | None = None, title: str = "", height: int = 460) -> go.Figure:
    """The causal attention matrix filling in one query row per generated token: ``attn`` [T, T] (row t = query t).

    Frame t shows rows 0 … t: everything GPT-2 without a cache computes again to produce token t.
    """
    a = checked_array("attn", attn, 2)
    T = a.shape[0]
    if a.shape != (T, T):
        raise ValueError(f"attn must be square [T, T], got {a.shape}")
    steps, first = animation_steps(T, start)
    panel = Panel(
        "attention weights softmax(q·k) of every query so far",
        _grown(_causal(a), steps, axis=0),
        x_title="key position s",
        y_title="query position t",
        zrange=UNIT,
        signed=False,
        hover=ATTENTION_HOVER,
    )
    return animated_heatmaps([panel], step_labels=[str(s) for s in steps], start=first, title=title, height=height)


def recompute_cost(
    position: np.ndarray,
    rows: Sequence[np.ndarray],
    flops: Sequence[np.ndarray],
    *,
    step: int | None = None,
    title: str = "",
    height: int = 380,
) -> go.Figure:
    """Work to generate each token, without and with a cache: Q/K/V rows projected (left) and FLOPs (right, log).

    Args:
        position: [T] N, the tokens in the context at each step.
        rows: (recompute, cached), each [T].
        flops: (recompute, cached), each [T], of one attention layer.
        step: 0-based step to mark.
    """
    n = checked_array("position", position, 1)
    data = []
    for col, series in enumerate((rows, flops)):
        for i, (name, y) in enumerate(zip((RECOMPUTE, CACHED), series, strict=True)):
            data.append(
                dict(
                    type="scatter",
                    x=n,
                    y=checked_array(name, y, 1),
                    name=name,
                    legendgroup=name,
                    showlegend=col == 0,
                    mode="lines+markers",
                    marker=dict(size=4),
                    line=series_line(i)[0],
                    hovertemplate=f"{name}<br>N = %{{x}} tokens: %{{y:,}}<extra></extra>",
                    **axis_refs(col),
                )
            )
    layout = subplot_grid(("Q/K/V rows projected for this token", "attention-layer FLOPs for this token"), spacing=0.1)
    for axis in ("xaxis", "xaxis2"):
        layout[axis]["title"] = dict(text="tokens in the context N")
    layout["yaxis"]["title"] = dict(text="rows")
    layout["yaxis2"].update(title=dict(text="FLOPs"), type="log", exponentformat="SI", dtick=1)
    layout["legend"] = dict(orientation="h", y=1.12, yanchor="bottom", x=1.0, xanchor="right")
    fig = figure(data, layout | house_layout(title=title, height=height))
    if step is not None:
        step_marker(fig, int(n[step]))
    return fig


def kv_cache_growth(
    keys: np.ndarray,
    values: np.ndarray,
    attn: np.ndarray,
    *,
    start: int | None = None,
    title: str = "",
    height: int = 460,
) -> go.Figure:
    """The cache gaining one key column and one value column per token, and each new query reading all of it.

    Args:
        keys: [T, K], values: [T, V] of one head (columns of the panels are positions).
        attn: [T, T]; row t is query t's attention over the t + 1 cached positions (frame t adds that row).
    """
    k, v, a = checked_array("keys", keys, 2), checked_array("values", values, 2), checked_array("attn", attn, 2)
    T = k.shape[0]
    if v.shape[0] != T or a.shape != (T, T):
        raise ValueError(f"keys [T, K], values [T, V], attn [T, T] must share T, got {k.shape}, {v.shape}, {a.shape}")
    steps, first = animation_steps(T, start)
    lim = float(max(np.abs(k).max(), np.abs(v).max())) or 1.0
    panels = [
        Panel("cached keys k_s", _grown(k.T, steps, axis=1), "position s", "key channel", True, (-lim, lim)),
        Panel("cached values v_s", _grown(v.T, steps, axis=1), "position s", "value channel", True, (-lim, lim)),
        Panel(
            "each query's weights over the cache",
            _grown(_causal(a), steps, 0),
            "position s",
            "query t",
            False,
            UNIT,
            hover=ATTENTION_HOVER,
        ),
    ]
    return animated_heatmaps(panels, step_labels=[str(s) for s in steps], start=first, title=title, height=height)


def cache_traffic(cache_bytes: np.ndarray, *, step: int | None = None, title: str = "", height: int = 360) -> go.Figure:
    """Bytes the cache holds after each token — which a decoding step reads in full — and the running total read.

    Args:
        cache_bytes: [T] KVCache.nbytes after each step (0-based steps).
    """
    held = checked_array("cache_bytes", cache_bytes, 1)
    steps = np.arange(held.size)
    data = [
        dict(
            type="scatter",
            x=steps,
            y=y,
            mode="lines+markers",
            marker=dict(size=4),
            line=dict(color=color, width=3),
            showlegend=False,
            text=[f"{int(b):,} bytes ({format_bytes(float(b))})" for b in y],
            hovertemplate="step %{x}<br>%{text}<extra></extra>",
            **axis_refs(col),
        )
        for col, (y, color) in enumerate(((held, GROWS), (np.cumsum(held), series_line(0)[0]["color"])))
    ]
    layout = subplot_grid(
        ("held after the step = read by the step", "read in total since the first token"), spacing=0.12
    )
    for axis in ("xaxis", "xaxis2"):
        layout[axis]["title"] = dict(text="step t")
    for axis in ("yaxis", "yaxis2"):
        layout[axis].update(title=dict(text="bytes"), rangemode="tozero")
    fig = figure(data, layout | house_layout(title=title, height=height))
    if step is not None:
        step_marker(fig, step)
    return fig


def _carried(values: np.ndarray, q_block: np.ndarray, block_size: int, T: int) -> np.ndarray:
    """[n_steps, T]: after each step, every query row's latest value (NaN before its block is first visited)."""
    out = np.full((len(q_block), T), np.nan)
    row = np.full(T, np.nan)
    for s, i in enumerate(q_block):
        rows = slice(i * block_size, min((i + 1) * block_size, T))
        row[rows] = values[s, : rows.stop - rows.start]
        out[s] = row
    return out


def online_softmax(
    scores: np.ndarray,
    q_block: np.ndarray,
    k_block: np.ndarray,
    m_steps: np.ndarray,
    l_steps: np.ndarray,
    block_size: int,
    *,
    start: int | None = None,
    title: str = "",
    height: int = 500,
) -> go.Figure:
    """FlashAttention's tiles, one (query block, key block) pair per frame, with the running max m and sum l.

    Args:
        scores: [T, T] scale·q·k, −inf where the causal mask hides a key.
        q_block, k_block: [n_steps] the pair processed at each step.
        m_steps, l_steps: [n_steps, block_size] m and l of the query block's rows after the step.
        block_size: rows (and keys) per block.
        start: the step (tile) shown first; default the last.
    """
    s = checked_array("scores", scores, 2)
    T = s.shape[0]
    n = len(q_block)
    if len(k_block) != n or np.shape(m_steps)[0] != n or np.shape(l_steps)[0] != n:
        raise ValueError("q_block, k_block, m_steps and l_steps must have one entry per step")
    blocks = np.arange(T) // block_size
    visited_at = np.full((T // block_size + 1,) * 2, np.inf)  # the step at which each tile is processed
    visited_at[np.asarray(q_block), np.asarray(k_block)] = np.arange(n)
    cell_step = visited_at[blocks[:, None], blocks[None, :]]  # [T, T]
    visible = np.where(np.isfinite(s), s, np.nan)
    steps, first = animation_steps(n, start)
    tiles = np.where(cell_step[None] <= steps[:, None, None], visible[None], np.nan).astype(np.float32)
    m = _carried(np.asarray(m_steps), q_block, block_size, T)[steps, :, None].astype(np.float32)
    l = _carried(np.asarray(l_steps), q_block, block_size, T)[steps, :, None].astype(np.float32)
    rows = [str(t) for t in range(T)]
    panels = [
        Panel("scores of the tiles visited so far", tiles, "key position s", "query position t", True),
        Panel("running max m", m, "", "query t", True, x_labels=["m"], y_labels=rows, width=0.35),
        Panel("running sum l", l, "", "query t", False, x_labels=["l"], y_labels=rows, width=0.35),
    ]
    labels = [f"Q{q_block[i]}·K{k_block[i]}" for i in steps]
    return animated_heatmaps(panels, step_labels=labels, start=first, title=title, height=height, slider_prefix="tile ")


def io_bytes(
    seq_lens: np.ndarray, standard: np.ndarray, tiled: np.ndarray, *, title: str = "", height: int = 380
) -> go.Figure:
    """Slow-memory bytes of standard and tiled attention for one head against sequence length (log-log)."""
    x = checked_array("seq_lens", seq_lens, 1)
    data = []
    for name, y, color in (
        ("standard: S and P go through slow memory", standard, 0),
        ("tiled (FlashAttention): only Q, K, V and O do", tiled, 1),
    ):
        y = checked_array(name, y, 1)
        data.append(
            dict(
                type="scatter",
                x=x,
                y=y,
                name=name,
                mode="lines+markers",
                line=series_line(color)[0],
                marker=series_line(color)[1],
                text=[f"{int(b):,} bytes ({format_bytes(float(b))})" for b in y],
                hovertemplate=f"{name}<br>T = %{{x:,}}: %{{text}}<extra></extra>",
            )
        )
    layout = dict(
        xaxis=dict(type="log", title=dict(text="sequence length T (tokens)")),
        yaxis=dict(type="log", title=dict(text="bytes moved, one head"), exponentformat="SI"),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0.0),
    )
    return figure(data, layout | house_layout(title=title, height=height))
