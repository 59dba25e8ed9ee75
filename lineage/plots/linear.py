"""Figures for the fixed-size memories without a gate: linear attention's additive state and DeltaNet's delta rule.

Pure builders: numpy in, ``go.Figure`` out. States, keys, values and writes are signed, drawn on a diverging scale
centred on zero with one range per panel, fixed across frames. Steps are 0-based (step t is the (t+1)-th token).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from lineage.plots.core import (
    LEGEND_BELOW,
    LEGEND_BELOW_MARGIN,
    STATE_HOVER,
    Panel,
    animated_heatmaps,
    animation_steps,
    axis_refs,
    checked_array,
    figure,
    heatmaps,
    house_layout,
    step_marker,
    subplot_grid,
)
from lineage.plots.palette import mechanism_line, series_line

SETTING_DASHES = ("dot", "dash", "longdash", "dashdot")  # lines of one mechanism at several settings

CHOSEN_BAR, OTHER_BAR = "#474747", "#B5B5B5"  # the chunk size the library picks, and the others: neutral greys


def _symmetric(*arrays: np.ndarray) -> tuple[float, float]:
    m = max(float(np.nanmax(np.abs(a))) for a in arrays) or 1.0
    return -m, m


def _labels(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def write_and_state(
    k: np.ndarray,
    written: np.ndarray,
    states: np.ndarray,
    *,
    value_labels: Sequence[str] | None = None,
    start: int | None = None,
    title: str = "",
    height: int = 440,
) -> go.Figure:
    """An additive memory step by step: this step's write k_t u_tᵀ beside the state S_t it is added to.

    Args:
        k: [T, K] keys as written (after the feature map). written: [T, V] the vector written along k_t.
        states: [T, K, V] the state after each step.
        value_labels: names of the V value columns (e.g. v0 … v7 and z for linear attention's normaliser).
    """
    k, u, S = checked_array("k", k, 2), checked_array("written", written, 2), checked_array("states", states, 3)
    T, K, V = S.shape
    if k.shape != (T, K) or u.shape != (T, V):
        raise ValueError(f"k must be [T, K] = {(T, K)} and written [T, V] = {(T, V)}, got {k.shape}, {u.shape}")
    steps, first = animation_steps(T, start)
    writes = np.einsum("tk,tv->tkv", k[steps], u[steps])
    cols, rows = list(value_labels) if value_labels is not None else _labels("v", V), _labels("k", K)
    labels = dict(x_title="value column", y_title="key row", signed=True, x_labels=cols, y_labels=rows)
    panels = [
        Panel("this step's write k_t u_tᵀ", writes.astype(np.float32), zrange=_symmetric(writes), **labels),
        Panel(
            "state S_t: every write so far",
            S[steps].astype(np.float32),
            zrange=_symmetric(S),
            hover=STATE_HOVER,
            **labels,
        ),
    ]
    return animated_heatmaps(panels, step_labels=[str(s) for s in steps], start=first, title=title, height=height)


def delta_rule_steps(
    k: np.ndarray,
    read: np.ndarray,
    target: np.ndarray,
    written: np.ndarray,
    states: np.ndarray,
    *,
    start: int | None = None,
    title: str = "",
    height: int = 460,
) -> go.Figure:
    """The delta rule step by step: what the memory returned at k_t, the value wanted, the correction written, the
    key it is written along (the write is k_t δ_tᵀ) and the state after it.

    Args:
        k: [T, K] unit keys. read: [T, V] S'ᵀ k_t before the write. target: [T, V] v_t.
        written: [T, V] δ_t = β_t (v_t − read). states: [T, K, V] S_t.
    """
    k, S = checked_array("k", k, 2), checked_array("states", states, 3)
    T, K, V = S.shape
    vecs = [checked_array(name, x, 2) for name, x in (("read", read), ("target", target), ("written", written))]
    if k.shape != (T, K) or any(x.shape != (T, V) for x in vecs):
        raise ValueError(f"k must be [T, K] = {(T, K)} and read, target, written [T, V] = {(T, V)}")
    steps, first = animation_steps(T, start)
    vectors = np.stack([x[steps] for x in vecs], axis=1)  # (F, 3, V)
    cols, rows = _labels("v", V), _labels("k", K)
    panels = [
        Panel(
            "read → target → correction",
            vectors.astype(np.float32),
            x_title="value column",
            signed=True,
            zrange=_symmetric(*vecs),
            x_labels=cols,
            y_labels=["read Sᵀk_t", "target v_t", "correction δ_t"],
            width=V,
        ),
        Panel(
            "key k_t",
            k[steps][:, :, None].astype(np.float32),
            y_title="key row",
            signed=True,
            zrange=_symmetric(k),
            x_labels=["k_t"],
            y_labels=rows,
            width=1.5,
        ),
        Panel(
            "state S_t = S + k_t δ_tᵀ",
            S[steps].astype(np.float32),
            x_title="value column",
            signed=True,
            zrange=_symmetric(S),
            x_labels=cols,
            y_labels=rows,
            width=V,
            hover=STATE_HOVER,
        ),
    ]
    return animated_heatmaps(panels, step_labels=[str(s) for s in steps], start=first, title=title, height=height)


def recall_and_norm(
    error: np.ndarray, state_norm: np.ndarray, *, step: int | None = None, title: str = "", height: int = 360
) -> go.Figure:
    """Left: mean error reading back every pair stored so far. Right: the state's size ‖S_t‖. Both against t."""
    e, n = checked_array("error", error, 1), checked_array("state_norm", state_norm, 1)
    if e.size != n.size:
        raise ValueError(f"error and state_norm must both be [T], got {e.size} and {n.size}")
    data = [
        dict(
            type="scatter",
            x=np.arange(e.size),
            y=y,
            mode="lines+markers",
            marker=dict(size=4),
            line=series_line(col)[0],
            showlegend=False,
            hovertemplate=f"step %{{x}}: %{{y:{fmt}}}<extra></extra>",
            **axis_refs(col),
        )
        for col, (y, fmt) in enumerate(((e, ".3f"), (n, ".4g")))
    ]
    layout = subplot_grid(("recall error of the pairs stored so far", "size of the state ‖S_t‖"), spacing=0.12)
    for axis in ("xaxis", "xaxis2"):
        layout[axis]["title"] = dict(text="step t")
    layout["yaxis"].update(title=dict(text="‖read − v‖ / ‖v‖"), rangemode="tozero")
    layout["yaxis2"].update(title=dict(text="Frobenius norm"), rangemode="tozero")
    fig = figure(data, layout | house_layout(title=title, height=height))
    if step is not None:
        step_marker(fig, step)
    return fig


def recall_by_age(
    curves: Mapping[str, np.ndarray],
    *,
    mechanisms: Mapping[str, str] | None = None,
    emphasis: str | None = None,
    title: str = "",
    height: int = 380,
) -> go.Figure:
    """Recall error of a pair against how many steps ago it was written, one line per memory or setting.

    Args:
        curves: line name -> [A] error by age.
        mechanisms: line name -> the mechanism it runs ("deltanet", …): the line takes that mechanism's colour,
            and lines of one mechanism (several settings) differ by dash. Lines not named here take the palette.
        emphasis: the line drawn bold with markers (the reader's own setting).
    """
    if not curves:
        raise ValueError("curves must name at least one line")
    mechanisms = dict(mechanisms or {})
    dashes = iter(SETTING_DASHES * len(curves))
    data = []
    for i, (name, y) in enumerate(curves.items()):
        y = checked_array(f"curves[{name!r}]", y, 1)
        bold = name == emphasis
        if name in mechanisms:
            line, marker = mechanism_line(mechanisms[name], width=4 if bold else 2)
            group = mechanisms[name]
        else:
            (line, marker), group = series_line(i, width=4 if bold else 2), None
        line["dash"] = "solid" if bold else next(dashes)
        data.append(
            dict(
                type="scatter",
                x=np.arange(y.size),
                y=y,
                name=name,
                legendgroup=group,
                mode="lines+markers" if bold else "lines",
                marker={**marker, "size": 7} if bold else None,
                line=line,
                hovertemplate=f"{name}<br>written %{{x}} steps before: %{{y:.3f}}<extra></extra>",
            )
        )
    layout = dict(
        xaxis=dict(title=dict(text="age of the pair (steps since it was written)")),
        yaxis=dict(title=dict(text="recall error ‖read − v‖ / ‖v‖"), rangemode="tozero"),
        legend=LEGEND_BELOW,
    )
    layout |= house_layout(title=title, height=height)
    layout["margin"]["b"] = LEGEND_BELOW_MARGIN
    return figure(data, layout)


def mixing(A: np.ndarray, *, title: str = "", height: int = 440) -> go.Figure:
    """The T×T matrix of o_t = Σ_j A_tj v_j: the parallel form as masked attention (blank above the diagonal)."""
    a = checked_array("A", A, 2)
    if a.shape[0] != a.shape[1]:
        raise ValueError(f"A must be square [T, T], got {a.shape}")
    masked = np.where(np.tri(a.shape[0], dtype=bool), a, np.nan)  # j > t: the causal mask, not a zero weight
    panel = Panel("A: how much of v_j reaches o_t", masked[None].astype(np.float32), "value j", "output t")
    return heatmaps([panel], title=title, height=height)


def chunk_schedule(
    A: np.ndarray, chunk_size: int, *, start: int | None = None, title: str = "", height: int = 460
) -> go.Figure:
    """The chunked form, one chunk per frame: what each chunk's outputs take from values inside the chunk
    (masked attention, computed in parallel) and from earlier chunks (only through the state handed over).

    Args:
        A: [T, T] with o = A v (from :func:`lineage.teach.stage_runs.mixing_matrix`). chunk_size: C ≥ 1.
        start: the chunk shown first (default the last).
    """
    a = checked_array("A", A, 2)
    T = a.shape[0]
    if a.shape != (T, T):
        raise ValueError(f"A must be square [T, T], got {a.shape}")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    chunk = np.arange(T) // chunk_size
    N = int(chunk[-1]) + 1
    t, j = np.arange(T)[:, None], np.arange(T)[None, :]
    same = (chunk[t] == chunk[j]) & (j <= t)  # inside a chunk, causal (the diagonal included)
    earlier = chunk[j] < chunk[t]  # every value of an earlier chunk
    steps, first = animation_steps(N, start)
    shown = chunk[None, :, None] <= steps[:, None, None]  # (F, T, 1): rows of the chunks done so far
    intra = np.where(shown & same[None], a[None], np.nan).astype(np.float32)
    inter = np.where(shown & earlier[None], a[None], np.nan).astype(np.float32)
    zrange = _symmetric(a)
    panels = [
        Panel("inside the chunk: masked attention", intra, "value j", "output t", True, zrange),
        Panel("from earlier chunks: through the state S", inter, "value j", "output t", True, zrange),
    ]
    labels = [str(n) for n in steps]
    return animated_heatmaps(
        panels, step_labels=labels, start=first, title=title, height=height, slider_prefix="chunk "
    )


def chunk_timing(
    chunk_sizes: np.ndarray,
    seconds: np.ndarray,
    model_flops: np.ndarray,
    *,
    chosen: int | None = None,
    title: str = "",
    height: int = 380,
) -> go.Figure:
    """Measured time of the chunked form against chunk size C (left axis) beside the FLOP model (right axis)."""
    c, t = checked_array("chunk_sizes", chunk_sizes, 1), checked_array("seconds", seconds, 1)
    f = checked_array("model_flops", model_flops, 1)
    if not c.size == t.size == f.size:
        raise ValueError(f"chunk_sizes, seconds, model_flops need one entry per size, got {c.size}, {t.size}, {f.size}")
    sizes = [str(int(x)) for x in c]
    data = [
        dict(
            type="bar",
            x=sizes,
            y=t * 1e3,
            name="measured time (ms)",
            marker=dict(color=[CHOSEN_BAR if chosen is not None and int(x) == chosen else OTHER_BAR for x in c]),
            hovertemplate="C = %{x}: %{y:.3f} ms<extra></extra>",
            xaxis="x",
            yaxis="y",
        ),
        dict(
            type="scatter",
            x=sizes,
            y=f,
            name="model: 2LD² + 2LCD FLOPs",
            mode="lines+markers",
            line=series_line(1)[0],
            hovertemplate="C = %{x}: %{y:,} FLOPs<extra></extra>",
            xaxis="x",
            yaxis="y2",
        ),
    ]
    # The FLOP model on a second y axis at the right, placed as make_subplots' secondary_y places it.
    layout = dict(
        xaxis=dict(anchor="y", domain=[0.0, 0.94], title=dict(text="chunk size C"), type="category"),
        yaxis=dict(anchor="x", domain=[0.0, 1.0], title=dict(text="ms per call (median)"), rangemode="tozero"),
        yaxis2=dict(
            anchor="x", overlaying="y", side="right", title=dict(text="FLOPs (cost model)"), rangemode="tozero"
        ),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0.0),
    )
    return figure(data, layout | house_layout(title=title, height=height))
