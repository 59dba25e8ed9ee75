"""Figures of the memory lab (:mod:`lineage.lab`): one builder per experiment, a result in, ``go.Figure`` out.

Every mechanism keeps one colour on every figure (Okabe–Ito, colour-blind-safe), and its line style says how it
writes: solid for the delta rule, dotted for additive writes, dashed for the softmax cache, dash-dot for the
hybrid — so lines that coincide (a gated mechanism at α = 1 is its ungated parent) stay distinguishable in the
legend. Errors are ‖read − value‖ with unit values: 0 is perfect, about 1 means nothing useful came back.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from lineage import mechanisms
from lineage.lab import (
    ELU1,
    HYBRID,
    CapacityResult,
    NeedleResult,
    OverwriteResult,
    RetentionResult,
    TopicSwitchResult,
    label,
    participants,
)
from lineage.plots.core import COLORSCALES, DIVERGING, axis_refs, cell_text, figure, house_layout, subplot_grid
from lineage.plots.palette import SERIES_STYLES
from lineage.plots.vocabulary import name_coinciding

# Each mechanism's colour from the table of mechanisms; the lab's hybrid takes MLA's (the layer it adds to KDA), and
# the ELU+1 variant of linear attention an olive of its own.
LAB_COLOURS = {HYBRID: mechanisms.mechanism("mla").colour, ELU1: "#999933"}  # the participants that are no mechanism


def participant_colour(m: str) -> str:
    """A participant's colour: its mechanism's from the table (read at the call, so a registered entry has its own),
    or the lab's own for the hybrid and the ELU+1 variant."""
    return LAB_COLOURS[m] if m in LAB_COLOURS else mechanisms.mechanism(m).colour


CACHE_DASH = {"cache": "dash", "cache + delta": "dashdot"}  # softmax's cache, and the hybrid's cache beside KDA
ERROR_AXIS = "recall error ‖read − value‖"
LINE_WIDTH_MIN = 2.0
LINE_WIDTH_STEP = 0.8
LEGEND_BELOW = dict(orientation="h", x=0.0, y=-0.22, yanchor="top")


def write_dash(write: str) -> str:
    """The dash of a participant's line by how it writes: a cache's (:data:`CACHE_DASH`) or its write rule's own
    (``lineage.mechanisms.WriteRule.lab_dash``); a ValueError naming what it can draw for anything else."""
    if write in CACHE_DASH:
        return CACHE_DASH[write]
    rules = mechanisms.write_rules()
    if write not in rules:
        raise ValueError(
            f"the lab draws a participant that writes to a cache ({', '.join(CACHE_DASH)}) or by a write rule "
            f"({', '.join(rules)}); {write!r} is neither: add its rule to lineage.mechanisms"
        )
    return rules[write].lab_dash


def _width(m: str) -> float:
    """Lines drawn earlier are wider, so a line that coincides with a later one shows as a rim around it."""
    order = list(participants())
    return LINE_WIDTH_MIN + LINE_WIDTH_STEP * (len(order) - 1 - order.index(m))


def _line(m: str, x, y, *, showlegend: bool = True, hover: str = "", panel: int | None = None) -> dict:
    return dict(
        type="scatter",
        x=np.asarray(x),
        y=np.asarray(y, dtype=float),
        mode="lines+markers",
        name=label(m),
        legendgroup=m,
        showlegend=showlegend,
        line=dict(color=participant_colour(m), dash=write_dash(participants()[m].write), width=_width(m)),
        marker=dict(size=4),
        hovertemplate=f"{label(m)}<br>{hover}%{{x}}: %{{y:.3f}}<extra></extra>",
        **(axis_refs(panel) if panel is not None else {}),
    )


def _bars(
    name: str, mechanisms, values, color: str, *, pattern: str = "", text: bool = True, panel: int | None = None
) -> dict:
    return dict(
        type="bar",
        x=[label(m) for m in mechanisms],
        y=np.asarray(values, dtype=float),
        name=name,
        marker=dict(color=color, pattern=dict(shape=pattern)),
        text=[f"{v:.2f}" for v in values] if text else None,
        textposition="outside" if text else None,
        hovertemplate=f"%{{x}}<br>{name}: %{{y:.3f}}<extra></extra>",
        **(axis_refs(panel) if panel is not None else {}),
    )


def _d_k_marks(d_k: int, places: tuple[str, ...] = ("top right",)) -> dict:
    """A dashed line at N = d_k in each panel, labelled at the corner of the line given for that panel ("top left",
    "bottom right", …): where the panel's curves leave room, so that no curve runs through the label."""
    shapes, annotations = [], []
    for i, place in enumerate(places):
        refs = axis_refs(i)
        xref, yref = refs["xaxis"], f"{refs['yaxis']} domain"
        vertical, side = place.split()
        line = dict(color="grey", dash="dash")
        shapes.append(dict(type="line", x0=d_k, x1=d_k, xref=xref, y0=0, y1=1, yref=yref, line=line))
        annotations.append(
            dict(
                showarrow=False,
                text=f"d_k = {d_k}",
                x=d_k,
                xanchor="right" if side == "left" else "left",
                xref=xref,
                y=1 if vertical == "top" else 0,
                yanchor=vertical,
                yref=yref,
            )
        )
    return dict(shapes=shapes, annotations=annotations)


def overwrite_vectors(r: OverwriteResult) -> go.Figure:
    """The retrieved vector of every mechanism, row by row, under v1 and v2 (one column per value component)."""
    rows = [r.v1, r.v2] + [r.retrieved[m] for m in r.mechanisms]
    names = ["v1 (old)", "v2 (new)"] + [label(m) for m in r.mechanisms]
    z = np.stack(rows)
    m = float(np.abs(z).max()) or 1.0
    text = cell_text(z)
    heatmap = dict(
        type="heatmap",
        z=z,
        x=list(range(z.shape[1])),
        y=names,
        zmin=-m,
        zmax=m,
        zmid=0.0,
        colorscale=COLORSCALES[DIVERGING],
        colorbar=dict(thickness=12, title=dict(text="value")),
        text=text,
        texttemplate="%{text}" if text is not None else None,
        textfont=dict(size=9),
        hovertemplate="%{y}<br>component %{x}: %{z:.3f}<extra></extra>",
    )
    layout = dict(xaxis=dict(title=dict(text="value component")), yaxis=dict(autorange="reversed"))
    title = "What came back for k*, against the old value v1 and the new value v2"
    return figure([heatmap], layout | house_layout(title=title, height=460))


def overwrite_blend(r: OverwriteResult) -> go.Figure:
    """Each read written as a·v1 + b·v2 (+ the rest): bars of a, b and the rest's size per mechanism."""
    ms = r.mechanisms
    data = [
        _bars("coefficient on v1 (old)", ms, [r.coef_v1[m] for m in ms], SERIES_STYLES[1][0], pattern="/"),
        _bars("coefficient on v2 (new)", ms, [r.coef_v2[m] for m in ms], SERIES_STYLES[0][0]),
        _bars("rest (crosstalk)", ms, [r.residual[m] for m in ms], "#999999", pattern="."),
    ]
    one = dict(type="line", x0=0, x1=1, xref="x domain", y0=1.0, y1=1.0, yref="y", line=dict(color="grey", dash="dot"))
    layout = dict(
        shapes=[one],
        barmode="group",
        legend=dict(orientation="h", y=1.12),
        yaxis=dict(title=dict(text="read ≈ a·v1 + b·v2 + rest")),
    )
    return figure(data, layout | house_layout(title="Overwrite: the new value, the old one, or a blend?", height=420))


def capacity_curves(r: CapacityResult) -> go.Figure:
    """Recall error and accuracy against the number of stored pairs N, with N = d_k marked."""
    data = []
    for m in r.mechanisms:
        data.append(_line(m, r.n, r.error[m], hover="N = ", panel=0))
        data.append(_line(m, r.n, r.accuracy[m], showlegend=False, hover="N = ", panel=1))
    layout = subplot_grid(("Recall error, mean over the N pairs", "Accuracy"), spacing=0.1)
    # up to d_k pairs every memory holds them all (error 0, accuracy 1): the label goes left of the line, away from
    # the perfect value; right of it the curves spread over the whole panel
    marks = _d_k_marks(r.settings.d_k, ("top left", "bottom left"))
    layout.update(shapes=marks["shapes"], annotations=layout["annotations"] + marks["annotations"])
    for axis in ("xaxis", "xaxis2"):
        layout[axis]["title"] = dict(text="pairs stored N")
    layout["yaxis"].update(title=dict(text=ERROR_AXIS), rangemode="tozero")
    layout["yaxis2"].update(title=dict(text="most aligned stored value is right"), range=[0, 1.05])
    layout["legend"] = LEGEND_BELOW
    title = f"Capacity: {r.trials} streams averaged, d_k = {r.settings.d_k}"
    return figure(name_coinciding(data), layout | house_layout(title=title, height=520))


def topic_switch_figure(r: TopicSwitchResult) -> go.Figure:
    """Left: how much of topic A the A cues still return as topic B streams in. Right: error on B, with and
    without A written first."""
    ms = r.mechanisms
    data = [_line(m, r.steps, r.a_kept_curve[m], hover="B writes ", panel=0) for m in ms]
    data.append(_bars("B after A", ms, [r.b_error[m] for m in ms], "#555555", text=False, panel=1))
    b_alone = [r.b_error_alone[m] for m in ms]
    data.append(_bars("B alone", ms, b_alone, "#BBBBBB", pattern="/", text=False, panel=1))
    layout = subplot_grid(("What topic A's cues still return", "Error on topic B"), spacing=0.12)
    layout["xaxis"]["title"] = dict(text="topic B pairs written after the switch")
    layout["yaxis"]["title"] = dict(text="⟨read, v_A⟩ (1 = all of A, 0 = gone)")
    layout["yaxis2"].update(title=dict(text=ERROR_AXIS), rangemode="tozero")
    layout.update(barmode="group", legend={**LEGEND_BELOW, "y": -0.4})  # below the slanted bar labels
    layout.update(house_layout(title=f"Topic switch: {r.n_a} pairs on A, then {r.n_b} on B", height=620))
    layout["margin"]["b"] = 170  # room for the slanted bar labels and a two-row legend
    return figure(name_coinciding(data), layout)


def retention_figure(r: RetentionResult) -> go.Figure:
    """Left: what a gate leaves of a write after a lag (KDA's slow and fast channels, Gated DeltaNet's one gate).
    Right: error on the long-lived facts as short-lived ones stream in."""
    styles = {
        "KDA slow channels": dict(color=participant_colour("kda"), dash="solid"),
        "KDA fast channels": dict(color=participant_colour("kda"), dash="dot"),
        "Gated DeltaNet": dict(color=participant_colour("gated_deltanet"), dash="solid"),
    }
    data = [
        dict(
            type="scatter",
            x=r.lags,
            y=curve,
            mode="lines",
            name=f"gate: {name}",
            line=dict(width=LINE_WIDTH_MIN + LINE_WIDTH_STEP, **styles[name]),
            hovertemplate=f"{name}<br>lag %{{x}}: %{{y:.3f}}<extra></extra>",
            **axis_refs(0),
        )
        for name, curve in r.retention.items()
    ]
    data += [_line(m, r.short_written, r.long_error_curve[m], hover="short facts ", panel=1) for m in r.mechanisms]
    layout = subplot_grid(("What a gate keeps after a lag", "Error on the long-lived facts"), spacing=0.12)
    layout["xaxis"]["title"] = dict(text="steps since the write")
    layout["yaxis"].update(title=dict(text="α^lag"), range=[0, 1.05])
    layout["xaxis2"]["title"] = dict(text="short-lived facts written since")
    layout["yaxis2"].update(title=dict(text=ERROR_AXIS), rangemode="tozero")
    layout["legend"] = LEGEND_BELOW
    title = "Per-channel retention at the same average decay"
    return figure(name_coinciding(data), layout | house_layout(title=title, height=560))


def needle_curves(r: NeedleResult) -> go.Figure:
    """The needle's recall error after each filler written on top of it, against pairs stored; N = d_k marked."""
    stored = r.fills + 1  # the needle and the fillers written on top of it
    layout = dict(
        **_d_k_marks(r.settings.d_k),
        xaxis=dict(title=dict(text="pairs stored, the needle first")),
        yaxis=dict(title=dict(text=ERROR_AXIS), rangemode="tozero"),
    )
    data = [_line(m, stored, r.error[m], hover="pairs stored ") for m in r.mechanisms]
    title = "Needle recall: pure KDA against the hybrid (KDA + softmax cache)"
    return figure(name_coinciding(data), layout | house_layout(title=title, height=440))
