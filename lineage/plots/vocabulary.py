"""One visual vocabulary, checked: what a figure may not do, and the one helper for lines that meet.

:func:`figure_problems` reads a figure (a ``go.Figure`` or its JSON, as Streamlit's ``AppTest`` hands it over) and
lists every place it breaks the house rules of :mod:`lineage.plots.palette`:

* a trace drawn in a mechanism's colour whose name does not name that mechanism (or a stage drawn in it);
* a heatmap of the state S_t (named ``S_t`` or hovering ``S[…]``) on another scale than ``STATE_SCALE``, or not
  centred at 0;
* two lines on the same axes that coincide on most of their points, hiding one under the other, unless a name says
  so (``same line as``).

:func:`spread_coinciding` is how a figure says so: lines that would coincide are drawn a little apart, and each
names the others it stands beside.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lineage.plots.palette import STATE_SCALE, css_to_rgb, mechanism_names, rgb_to_hex

SAYS_SO = "same line as"  # the words a line's name carries when it is drawn beside lines with the same values
COINCIDE_SHARE = 0.6  # two lines coincide when at least this share of their common points are equal
MIN_POINTS = 3  # reference lines (two points) and single markers are not lines that can hide one another


def _as_json(fig) -> dict:
    return fig.to_plotly_json() if isinstance(fig, go.Figure) else fig


def _hex(colour) -> str | None:
    if not isinstance(colour, str):
        return None
    try:
        return rgb_to_hex(css_to_rgb(colour)).upper()
    except ValueError:
        return None  # a named CSS colour ("grey"): not one of the table's hex colours


def _colours(trace: dict) -> set[str]:
    out = set()
    for part in ("line", "marker"):
        c = (trace.get(part) or {}).get("color")
        for one in c if isinstance(c, list | tuple) else [c]:
            h = _hex(one)
            if h:
                out.add(h)
    return out


def _label(trace: dict) -> str:
    return " ".join(str(trace.get(k) or "") for k in ("name", "legendgroup", "hovertemplate")).lower()


def colour_problems(fig) -> list[str]:
    """Traces in a mechanism's colour that do not name that mechanism."""
    owners = mechanism_names()
    problems = []
    for i, trace in enumerate(_as_json(fig).get("data", [])):
        label = _label(trace)
        for colour in _colours(trace):
            names = owners.get(colour)
            if names and not any(n.lower() in label for n in names):
                problems.append(
                    f"trace {i} ({trace.get('name')!r}) wears {colour}, the colour of {names[1]!r}, and is not it"
                )
    return problems


def _is_state(trace: dict) -> bool:
    return trace.get("type") == "heatmap" and (
        "S_t" in str(trace.get("name") or "") or str(trace.get("hovertemplate") or "").startswith("S[")
    )


def _scale_is_state(scale, expected: list) -> bool:
    if isinstance(scale, str):
        return scale == STATE_SCALE
    return [[float(a), str(b)] for a, b in scale or []] == [[float(a), str(b)] for a, b in expected]


def state_scale_problems(fig) -> list[str]:
    """Heatmaps of S_t (in the figure and in its frames) not on STATE_SCALE centred at 0."""
    from lineage.plots.core import COLORSCALES

    expected = COLORSCALES[STATE_SCALE]
    fig = _as_json(fig)
    problems = []
    traces = list(enumerate(fig.get("data", [])))
    for i, trace in traces:
        if not _is_state(trace):
            continue
        centred = trace.get("zmid") == 0 or (
            trace.get("zmin") is not None and np.isclose(trace.get("zmin"), -(trace.get("zmax") or 0))
        )
        if not _scale_is_state(trace.get("colorscale"), expected) or not centred:
            problems.append(f"S_t heatmap {i} ({trace.get('name')!r}) is not on {STATE_SCALE} centred at 0")
        for frame in fig.get("frames", []):
            idx = frame.get("traces") or list(range(len(frame.get("data", []))))
            for j, ft in zip(idx, frame.get("data", []), strict=False):
                if j == i and "colorscale" in ft and not _scale_is_state(ft["colorscale"], expected):
                    problems.append(f"S_t heatmap {i} changes scale in frame {frame.get('name')}")
    return problems


def _axes(trace: dict) -> tuple[str, str]:
    return trace.get("xaxis") or "x", trace.get("yaxis") or "y"


def _lines(fig: dict) -> list[tuple[int, dict, np.ndarray, np.ndarray]]:
    out = []
    for i, t in enumerate(fig.get("data", [])):
        if t.get("type", "scatter") != "scatter" or "lines" not in str(t.get("mode", "lines")):
            continue
        x, y = t.get("x"), t.get("y")
        if x is None or y is None or len(y) < MIN_POINTS:
            continue
        yy = np.array([np.nan if v is None else v for v in y], dtype=np.float64)
        xx = np.asarray(x)
        out.append((i, t, xx, yy))
    return out


def _equal_points(y1: np.ndarray, y2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(where both lines have a value, where those values are equal to rounding), per point."""
    both = np.isfinite(y1) & np.isfinite(y2)
    scale = max(float(np.nanmax(np.abs(np.concatenate([y1[both], y2[both]])))), 1e-12) if both.any() else 1.0
    return both, both & (np.abs(np.where(both, y1 - y2, 0.0)) <= 1e-6 * scale)


def coinciding(x1, y1, x2, y2) -> bool:
    """Whether two lines share most of their points (at equal x, equal y), on at least MIN_POINTS points."""
    if len(x1) != len(x2) or not np.array_equal(np.asarray(x1).astype(str), np.asarray(x2).astype(str)):
        return False
    both, same = _equal_points(y1, y2)
    if both.sum() < MIN_POINTS:
        return False
    return bool(same[both].mean() >= COINCIDE_SHARE)


def parting(x, y1, y2) -> str:
    """Where two coinciding lines part, for the words that name them: " except at 25–31" (runs of x where their
    values differ; a count of points for an axis that is not numbers), or "" where they never do. A line that
    stands for another on most points but leaves it where the chart makes its point must not read as the same line."""
    _, same = _equal_points(np.asarray(y1, dtype=np.float64), np.asarray(y2, dtype=np.float64))
    apart = np.flatnonzero(~same)
    if not apart.size:
        return ""
    xs = np.asarray(x)
    if not np.issubdtype(xs.dtype, np.number):
        return f" except at {apart.size} of {len(xs)} points"
    runs, start = [], apart[0]
    for a, b in zip(apart, [*apart[1:], None], strict=True):
        if b is None or b != a + 1:
            runs.append(f"{xs[start]:g}" if start == a else f"{xs[start]:g}–{xs[a]:g}")
            start = b
    return " except at " + ", ".join(runs)


def hidden_line_problems(fig) -> list[str]:
    """Pairs of lines on the same axes that coincide on most points, where neither says so."""
    fig = _as_json(fig)
    lines = _lines(fig)
    problems = []
    for a in range(len(lines)):
        for b in range(a + 1, len(lines)):
            i, ti, xi, yi = lines[a]
            j, tj, xj, yj = lines[b]
            if _axes(ti) != _axes(tj):
                continue
            if coinciding(xi, yi, xj, yj) and SAYS_SO not in _label(ti) and SAYS_SO not in _label(tj):
                problems.append(f"lines {i} ({ti.get('name')!r}) and {j} ({tj.get('name')!r}) coincide, unsaid")
    return problems


def figure_problems(fig) -> list[str]:
    """Every break of the house vocabulary in one figure (empty: none)."""
    return colour_problems(fig) + state_scale_problems(fig) + hidden_line_problems(fig)


def coinciding_groups(series: dict[str, np.ndarray], *, x: Sequence | None = None) -> list[list[str]]:
    """The series grouped by the line they would draw: each group coincides with its first member on most points."""
    ys = {n: np.asarray(y, dtype=np.float64) for n, y in series.items()}
    xs = np.arange(len(next(iter(ys.values())))) if x is None and ys else np.asarray(x)
    groups: list[list[str]] = []
    for n, y in ys.items():
        home = next((g for g in groups if coinciding(xs, ys[g[0]], xs, y)), None)
        if home is None:
            groups.append([n])
        else:
            home.append(n)
    return groups


def spread_coinciding(
    series: dict[str, np.ndarray], *, offset: float, x: Sequence | None = None
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Lines that would coincide, drawn ``offset`` apart (in y), each with a note that says which it stands beside.

    Returns (the y values to draw, name -> note: "same line as …; drawn apart", or "" for a line that meets nobody and
    is returned unchanged). The offset is for the eye only: hover should show the true values, and the note (in the
    hover, where the legend has no room for it) and a line under the chart say so.
    """
    ys = {n: np.asarray(series[n], dtype=np.float64) for n in series}
    drawn, notes = dict(ys), dict.fromkeys(series, "")
    groups = coinciding_groups(series, x=x)
    xs = np.arange(len(next(iter(ys.values())))) if x is None and ys else x
    for g in groups:
        if len(g) < 2:
            continue
        for j, n in enumerate(g):
            drawn[n] = ys[n] + (j - (len(g) - 1) / 2) * offset
            notes[n] = f"{SAYS_SO} {', '.join(m + parting(xs, ys[n], ys[m]) for m in g if m != n)}; drawn apart"
    return drawn, notes


def name_coinciding(data: list[dict]) -> list[dict]:
    """Traces (as dicts) with every line that coincides with others on the same axes named as standing for them all:
    its legend name gains "(same line as …)". The lines stay where they are (the lab draws earlier lines wider, so a
    hidden one shows as a rim); the names say what the rim means."""
    lines = _lines({"data": data})
    others: dict[int, list[str]] = {}
    for a in range(len(lines)):
        for b in range(a + 1, len(lines)):
            i, ti, xi, yi = lines[a]
            j, tj, xj, yj = lines[b]
            if _axes(ti) == _axes(tj) and coinciding(xi, yi, xj, yj):
                apart = parting(xi, yi, yj)
                others.setdefault(i, []).append(str(tj.get("name")) + apart)
                others.setdefault(j, []).append(str(ti.get("name")) + apart)
    out = []
    for i, trace in enumerate(data):
        if i in others:
            trace = trace | dict(name=f"{trace.get('name')} ({SAYS_SO} {', '.join(others[i])})")
        out.append(trace)
    return out
