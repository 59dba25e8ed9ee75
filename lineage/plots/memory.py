"""Figures for memory and cost: cache bytes against context, per-layer bytes, and the live decode benchmark.

Pure builders: numpy in, ``go.Figure`` out. Byte counts are shown exactly in the hover ("1,234,567 bytes") and
in decimal units beside them (GB = 10^9 bytes, as GPU datasheets count).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from lineage import stages
from lineage.plots.core import figure, house_layout
from lineage.plots.palette import MEMORY_COLOURS, NEUTRAL, mechanism_line, series_line, stage_line
from lineage.units import format_bytes

GPU_LINE_GROUP = "gpu"  # legendgroup of the horizontal GPU-memory lines
COPY_LINE_GROUP = "copy"  # legendgroup of the 100 %-of-copy-bandwidth line
LABEL_PX = 26  # vertical room one line of an end label takes (20 px text in presenter mode)
LABELS_MARGIN_PX = 330  # the right margin that holds the end labels
NAMES_PER_ROW = 2  # stage names per row of an end label


def _bytes_text(values: np.ndarray) -> list[str]:
    return [f"{int(b):,} bytes ({format_bytes(float(b))})" for b in values]


def _check_1d(name: str, x, n: int | None = None) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    if n is not None and arr.size != n:
        raise ValueError(f"{name} must have {n} entries (one per point), got {arr.size}")
    return arr


def cache_vs_length(
    seq_lens: np.ndarray,
    series: Mapping[str, np.ndarray],
    *,
    gpu_memory: Mapping[str, int] | None = None,
    mark_len: int | None = None,
    title: str = "Memory held while decoding, against context length",
    height: int = 520,
) -> go.Figure:
    """Log-log lines of bytes held against tokens of context, one per model, with GPU capacities as flat lines.

    Args:
        seq_lens: [N] context lengths (tokens), increasing.
        series: model name -> [N] bytes (cache + state) at each length.
        gpu_memory: accelerator name -> memory in bytes; names sharing a capacity share one dotted line.
        mark_len: a context length to mark with a vertical line (the table's length).
    """
    x = _check_1d("seq_lens", seq_lens)
    if not series:
        raise ValueError("series must hold at least one model")
    data = []
    for i, (name, y) in enumerate(series.items()):
        y = _check_1d(f"series[{name!r}]", y, x.size)
        data.append(
            dict(
                type="scatter",
                x=x,
                y=y,
                mode="lines",
                name=name,
                line=series_line(i)[0],  # a model is not a mechanism: a neutral series, named in the legend
                text=_bytes_text(y),
                hovertemplate=f"<b>{name}</b><br>%{{x:,}} tokens<br>%{{text}}<extra></extra>",
            )
        )
    by_size: dict[int, list[str]] = {}
    for name, size in (gpu_memory or {}).items():
        by_size.setdefault(int(size), []).append(name)
    for size, names in sorted(by_size.items()):
        label = f"{format_bytes(size)} GPU ({', '.join(names)})"
        data.append(
            dict(
                type="scatter",
                x=[x[0], x[-1]],
                y=[size, size],
                mode="lines",
                name=label,
                legendgroup=GPU_LINE_GROUP,
                line=dict(color=NEUTRAL, dash="dot", width=1.5),
                text=_bytes_text(np.array([size, size])),
                hovertemplate=f"{label}<br>%{{text}}<extra></extra>",
            )
        )
    # Plotly's own log ticks say "1B" for a billion, which reads as one byte here: label decades in bytes.
    ys = np.concatenate([np.asarray(y, dtype=float) for y in series.values()] + [np.array(list(by_size), float)])
    ys = ys[ys > 0]
    decades = 10.0 ** np.arange(np.floor(np.log10(ys.min())), np.ceil(np.log10(ys.max())) + 1)
    layout = dict(
        xaxis=dict(type="log", title=dict(text="context length (tokens)")),
        yaxis=dict(
            type="log",
            title=dict(text="bytes held (KV cache + fixed state)"),
            tickvals=decades,
            ticktext=[format_bytes(d) for d in decades],
        ),
        hovermode="closest",
        legend=dict(orientation="v"),
    )
    if mark_len is not None:
        layout["shapes"] = [
            dict(
                type="line",
                x0=mark_len,
                x1=mark_len,
                xref="x",
                y0=0,
                y1=1,
                yref="y domain",
                line=dict(color="#999999", dash="dash", width=1),
            )
        ]
    return figure(data, layout | house_layout(title=title, height=height))


def per_layer_bars(
    kinds: Sequence[str],
    cache_bytes: np.ndarray,
    state_bytes: np.ndarray,
    *,
    title: str = "Bytes per layer",
    height: int = 380,
) -> go.Figure:
    """Stacked bars per layer (1-based): the growing KV cache and the fixed state, the layer's kind in the hover."""
    cache = _check_1d("cache_bytes", cache_bytes)
    state = _check_1d("state_bytes", state_bytes, cache.size)
    if len(kinds) != cache.size:
        raise ValueError(f"kinds must have {cache.size} entries (one per layer), got {len(kinds)}")
    layers = np.arange(1, cache.size + 1)
    data = [
        dict(
            type="bar",
            x=layers,
            y=y,
            name=name,
            marker=dict(color=color),
            customdata=list(kinds),
            text=_bytes_text(y),
            textposition="none",
            hovertemplate=f"layer %{{x}} (%{{customdata}})<br>{name}: %{{text}}<extra></extra>",
        )
        for name, y, color in (
            ("KV cache (grows with context)", cache, MEMORY_COLOURS["cache"]),
            ("state (fixed)", state, MEMORY_COLOURS["state"]),
        )
    ]
    layout = dict(
        barmode="stack",
        bargap=0.15,
        xaxis=dict(title=dict(text="layer"), dtick=1 if cache.size <= 32 else None),
        # SI prefixes with a byte suffix ("1.2GB"): Plotly's own "1.2B" means a billion but reads as bytes
        yaxis=dict(title=dict(text="bytes"), exponentformat="SI", ticksuffix="B"),
    )
    return figure(data, layout | house_layout(title=title, height=height))


def decode_time_vs_context(
    contexts: np.ndarray,
    series: Mapping[str, np.ndarray],
    *,
    floor_ms: np.ndarray | None = None,
    floor_name: str = "bandwidth floor (bytes read / copy bandwidth)",
    mechanisms: Mapping[str, str] | None = None,
    title: str = "Time of one decoding step against context",
    height: int = 460,
) -> go.Figure:
    """Log-log milliseconds per token against context, one line per layer, with an optional bandwidth floor.

    ``mechanisms``: series name -> the mechanism it times ("softmax", "kda", …), whose colour and line it takes.
    """
    x = _check_1d("contexts", contexts)
    if not series:
        raise ValueError("series must hold at least one layer")
    mechanisms = dict(mechanisms or {})
    data = []
    for i, (name, y) in enumerate(series.items()):
        if name in mechanisms:
            line, marker = mechanism_line(mechanisms[name])
        else:
            line, marker = series_line(i)
        data.append(
            dict(
                type="scatter",
                x=x,
                y=_check_1d(f"series[{name!r}]", y, x.size),
                mode="lines+markers",
                name=name,
                legendgroup=mechanisms.get(name),
                line=line,
                marker=marker or None,
                hovertemplate=f"<b>{name}</b><br>%{{x:,}} tokens: %{{y:.4g}} ms/token<extra></extra>",
            )
        )
    if floor_ms is not None:
        data.append(
            dict(
                type="scatter",
                x=x,
                y=_check_1d("floor_ms", floor_ms, x.size),
                mode="lines",
                name=floor_name,
                line=dict(color=NEUTRAL, dash="dot", width=1.5),
                hovertemplate=f"{floor_name}<br>%{{x:,}} tokens: %{{y:.4g}} ms<extra></extra>",
            )
        )
    layout = dict(
        xaxis=dict(type="log", title=dict(text="context length (tokens)")),
        yaxis=dict(type="log", title=dict(text="ms per token")),
    )
    return figure(data, layout | house_layout(title=title, height=height))


def bandwidth_fraction(
    contexts: np.ndarray,
    fraction: np.ndarray,
    *,
    bound_bytes_per_s: float | np.ndarray,
    bound_name: str = "memory copy",
    title: str = "Achieved bandwidth of the KV-cache step, as a share of its bound",
    height: int = 400,
) -> go.Figure:
    """The KV step's bytes read per second over a bandwidth bound, against context (log x), with the 100 % line.

    ``bound_bytes_per_s`` is one number (e.g. a large memory copy) or one per context (e.g. reading the same bytes the
    step reads, measured at each size: the bound that holds while a small cache sits in the processor's caches).
    """
    x = _check_1d("contexts", contexts)
    y = _check_1d("fraction", fraction, x.size)
    bound = np.broadcast_to(np.asarray(bound_bytes_per_s, dtype=np.float64), x.shape)
    if not (np.all(bound > 0) and np.all(np.isfinite(bound))):
        raise ValueError(f"bound_bytes_per_s must be positive and finite, got {bound_bytes_per_s}")
    achieved = y * bound / 1e9
    label = (
        f"{bound_name}: {float(bound[0]) / 1e9:.3g} GB/s"
        if np.ndim(bound_bytes_per_s) == 0
        else f"{bound_name} ({float(bound.min()) / 1e9:.3g}–{float(bound.max()) / 1e9:.3g} GB/s)"
    )
    data = [
        dict(
            type="scatter",
            x=x,
            y=y,
            mode="lines+markers",
            name="KV-cache step",
            line=series_line(0)[0],
            customdata=achieved,
            hovertemplate=f"%{{x:,}} tokens: %{{customdata:.3g}} GB/s = %{{y:.0%}} of {bound_name}<extra></extra>",
        ),
        dict(
            type="scatter",
            x=[x[0], x[-1]],
            y=[1.0, 1.0],
            mode="lines",
            name=label,
            legendgroup=COPY_LINE_GROUP,
            line=dict(color=NEUTRAL, dash="dot", width=1.5),
            hovertemplate=f"{label}<extra></extra>",
        ),
    ]
    layout = dict(
        xaxis=dict(type="log", title=dict(text="context length (tokens)")),
        yaxis=dict(title=dict(text=f"share of {bound_name}"), tickformat=".0%", rangemode="tozero"),
    )
    return figure(data, layout | house_layout(title=title, height=height))


def short_title(stage_key: str) -> str:
    """A stage's title without its parenthesis: "GPT-2", "KDA", "Hybrid"."""
    return stages.stage(stage_key).title.split(" (")[0]


def _spread(y_px: list[float], heights: list[float]) -> list[float]:
    """Label centres moved apart (upwards, in px from the bottom) so neighbours' boxes of ``heights`` do not overlap."""
    order = sorted(range(len(y_px)), key=lambda i: y_px[i])
    placed = list(y_px)
    for prev, i in zip(order, order[1:], strict=False):
        placed[i] = max(placed[i], placed[prev] + (heights[prev] + heights[i]) / 2)
    return placed


def memory_by_stage(
    seq_lens: np.ndarray,
    stage_bytes: Mapping[str, np.ndarray],
    *,
    notes: Mapping[str, str] | None = None,
    baseline: tuple[str, str, np.ndarray] | None = None,
    together: float = 1.25,
    title: str = "",
    height: int = 560,
) -> go.Figure:
    """The lineage in one chart: bytes one layer of each stage holds against context (log-log), labelled at the
    line ends instead of a legend.

    Stages with the same curve share one line, named after all of them. Lines whose last values lie within a factor
    ``together`` of each other share one end label (the fixed-state stages), each name in its stage's colour; the
    hover gives every line's exact bytes. Each line has its stage's colour, dash and marker
    (:func:`lineage.plots.palette.stage_line`).

    Args:
        seq_lens: [N] context lengths, increasing.
        stage_bytes: stage key -> [N] bytes held.
        notes: stage key -> a second line for its end label (what the line assumes).
        baseline: (label, note, [N] bytes) of MLA in every layer of the same width: the line the hybrid's saving is
            measured against, drawn in MLA's colour.
    """
    x = _check_1d("seq_lens", seq_lens)
    if not stage_bytes:
        raise ValueError("stage_bytes must hold at least one stage")
    lines = _stage_lines(x, stage_bytes, dict(notes or {}), baseline)
    data = [
        dict(
            type="scatter",
            x=x,
            y=y,
            mode="lines+markers",
            name=name,
            legendgroup=group,  # the stage (or mechanism) drawn: its colour is the table's
            showlegend=False,
            line=line,
            marker={**marker, "maxdisplayed": 8},
            text=_bytes_text(y),
            hovertemplate=f"<b>{name}</b><br>%{{x:,}} tokens<br>%{{text}}<extra></extra>",
        )
        for group, name, _, y, line, marker in lines
    ]
    all_y = np.concatenate([y for *_, y, _, _ in lines])
    lo, hi = np.floor(np.log10(all_y.min())), np.ceil(np.log10(all_y.max()))
    decades = 10.0 ** np.arange(lo, hi + 1)
    pad = 0.02 * np.log10(x[-1] / x[0])  # set, not autoranged: autorange would make room for the end labels
    layout = dict(
        xaxis=dict(
            type="log",
            title=dict(text="context length (tokens)"),
            range=[np.log10(x[0]) - pad, np.log10(x[-1]) + pad],
        ),
        yaxis=dict(
            type="log",
            title=dict(text="bytes one layer holds"),
            tickvals=decades,
            ticktext=[format_bytes(d) for d in decades],
            range=[lo, hi],
        ),
        annotations=_end_labels(x, lines, together, (height - 70 - 90) / (hi - lo), lo),
        hovermode="closest",
        showlegend=False,
    )
    layout |= house_layout(title=title, height=height)
    layout["margin"] = dict(l=90, r=LABELS_MARGIN_PX, t=70 if title else 30, b=70)
    return figure(data, layout)


def _stage_lines(x: np.ndarray, stage_bytes: Mapping[str, np.ndarray], notes: dict, baseline) -> list[tuple]:
    """The lines of :func:`memory_by_stage`, stages with the same curve on one: (legend group, name, end-label rows,
    y, line, marker) each, the baseline last."""
    groups: dict[bytes, list[str]] = {}
    curves = {}
    for key, y in stage_bytes.items():
        y = _check_1d(f"stage_bytes[{key!r}]", y, x.size).astype(np.float64)
        curves[key] = y
        groups.setdefault(y.tobytes(), []).append(key)
    lines = []
    for keys in groups.values():
        line, marker = stage_line(keys[0])
        name = " · ".join(short_title(k) for k in keys)
        names = [f'<span style="color:{stage_line(k)[0]["color"]}">{short_title(k)}</span>' for k in keys]
        label = [" · ".join(names[i : i + NAMES_PER_ROW]) for i in range(0, len(names), NAMES_PER_ROW)]
        label += [notes[k] for k in keys if notes.get(k)]
        lines.append((keys[0], name, label, curves[keys[0]], line, marker))
    if baseline is not None:
        b_label, b_note, b_bytes = baseline
        line, marker = mechanism_line("mla")
        line["dash"] = "longdash"
        b_bytes = _check_1d("baseline bytes", b_bytes, x.size).astype(np.float64)
        coloured = f'<span style="color:{line["color"]}">{b_label}</span>'
        lines.append(("mla", b_label, [coloured, b_note], b_bytes, line, marker))
    return lines


def _end_labels(x: np.ndarray, lines: list[tuple], together: float, px_per_decade: float, lo: float) -> list[dict]:
    """One label per cluster of line ends within a factor ``together`` of each other, spread so that none overlap,
    each with an arrow to where its lines end."""
    ends = np.log10([y[-1] for *_, y, _, _ in lines])
    order = np.argsort(ends)
    clusters: list[list[int]] = []
    for i in order:
        if clusters and ends[i] - ends[clusters[-1][0]] <= np.log10(together):
            clusters[-1].append(int(i))
        else:
            clusters.append([int(i)])
    texts, at, heights = [], [], []
    for cluster in clusters:
        rows = [row for i in sorted(cluster, key=lambda i: -ends[i]) for row in lines[i][2]]
        if len(cluster) > 1:
            held = [lines[i][3][-1] for i in cluster]
            rows.append(f"{format_bytes(min(held))}–{format_bytes(max(held))} each")
        texts.append("<br>".join(rows))
        at.append(float(np.mean(ends[cluster])))
        heights.append(LABEL_PX * sum(1 + row.count("<br>") for row in rows))
    true_px = [(a - lo) * px_per_decade for a in at]
    placed = _spread(true_px, heights)
    return [
        dict(
            x=float(np.log10(x[-1])),
            y=a,
            xref="x",
            yref="y",
            text=t,
            align="left",
            xanchor="left",
            showarrow=True,
            arrowcolor=NEUTRAL,
            arrowwidth=1,
            arrowhead=0,
            ax=24,
            ay=-(p - q),
            standoff=4,
        )
        for t, a, p, q in zip(texts, at, placed, true_px, strict=True)
    ]
