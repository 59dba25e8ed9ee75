"""The lineage's colours, and the colour science that checks them.

* **Stages and mechanisms** take their colour from the one table of mechanisms (``lineage.mechanisms``, its
  ``colour`` field), through :func:`mechanism_colour` and :func:`stage_colour` only: seven colours of the Okabe–Ito
  palette (Okabe & Ito, *Color Universal Design*, 2008) and, for GLA, Paul Tol's "wine" (#882255) in place of
  Okabe–Ito's yellow, which is too faint on white (contrast 1.3:1) to read as a line on a projector. A stage without a
  mechanism of its own (the KV cache) takes its layer's (softmax attention's); the hybrid takes MLA's, the layer it
  adds. Where two stages can share a line (a gated stage at α = 1 is its ungated parent), the dash says the gate and
  the marker the write rule (:func:`mechanism_line`), so they stay apart without colour.
* **Everything that is not a mechanism** keeps off the mechanisms' colours. What grows with the context (a cache) and
  what stays fixed (a state) have one pair of colours on every page, :data:`GROWS` (brown) and :data:`FIXED`
  (indigo); any other series (the story's facts, rows and bytes, errors and norms) is drawn in neutral greys told
  apart by dash and marker (:func:`series_line`), and labelled at its end where lines may meet. The tests hold both
  at least ``MIN_OTHER_DELTA_E`` from every mechanism colour.
* **The state S_t** has one scale on every page, :data:`STATE_SCALE` (RdBu, centred at 0): the delta rule writes
  signed entries, and a state that happens to be non-negative at one setting keeps the scale it has at another.
* **Colour scales**: viridis for unsigned values (lightness rises with the value, so it reads in greyscale), ColorBrewer
  RdBu for signed ones (lightness falls with |value| on both sides: greyscale keeps the magnitude, the cell text and
  the hover the sign). Masked cells (a causal mask's future, a padded chunk) are left empty and show ``MASKED``
  through the plot's background: a light warm grey that neither scale passes through.
* **Checks**: colour-vision-deficiency simulation (Machado, Oliveira & Fernandes, *A Physiologically-based Model for
  Simulation of Color Vision Deficiency*, IEEE TVCG 15(6), 2009: their matrices for protanopia and deuteranopia at
  severity 1.0, applied to linear sRGB) and the CIEDE2000 colour difference (Sharma, Wu & Dalal, *The CIEDE2000
  Color-Difference Formula: Implementation Notes*, Color Res. Appl. 30(1), 2005). The tests hold every two stage
  colours at least ``MIN_CVD_DELTA_E`` apart under both simulations.
"""

from __future__ import annotations

import numpy as np

from lineage import mechanisms, stages

OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky blue": "#56B4E9",
    "bluish green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish purple": "#CC79A7",
}
NEUTRAL = "#666666"  # reference lines (GPU memory, bandwidth floors, "1.0" marks): never a stage's colour
MASKED = "#E8DCCB"  # the background masked (empty) heatmap cells show: warm light grey, on neither colour scale
MIN_CVD_DELTA_E = 10.0  # CIEDE2000 between any two stage colours, under simulated deuteranopia and protanopia
GROWS = "#8C510A"  # a cache: grows with the context (ColorBrewer BrBG's brown)
FIXED = "#332288"  # a state: the same size at every length (Paul Tol's indigo)
MEMORY_COLOURS = {"cache": GROWS, "state": FIXED}  # a line or bar by its kind of memory: a growing cache, a fixed state
# Neutral series: two greys (clear of softmax's black and of NEUTRAL's reference lines) told apart by dash and marker.
SERIES_STYLES = (
    ("#474747", "solid", "circle"),
    ("#8A8A8A", "dash", "square"),
    ("#474747", "dot", "diamond"),
    ("#8A8A8A", "dashdot", "triangle-up"),
    ("#474747", "longdash", "x"),
    ("#8A8A8A", "longdashdot", "cross"),
)
MIN_OTHER_DELTA_E = 15.0  # CIEDE2000 (normal sight) between a non-mechanism colour and every mechanism colour
STATE_SCALE = "RdBu_r"  # the state S_t's colour scale on every page (lineage.plots.core.DIVERGING), centred at 0
# The second cue of a line: its dash says the gate (a gated stage at α = 1 coincides with its ungated parent, which
# has the other dash), its marker the write rule (each rule's own, lineage.mechanisms.WriteRule.marker; the softmax
# family, which keeps a cache, CACHE_MARKER).
GATE_DASH = {"none": "solid", "scalar": "dash", "channel": "dot"}
CACHE_MARKER = "square"
HYBRID_LINE = dict(dash="dashdot", marker="star")  # a stage of more than one mechanism: the hybrid's KDA and MLA

# Machado et al. (2009), Table 1 at severity 1.0: linear RGB of the normal view -> linear RGB of the simulated view.
CVD_MATRICES = {
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
    ),
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
}
CVD_DEFICIENCIES = tuple(CVD_MATRICES)

_SRGB_TO_XYZ = np.array(
    [[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750], [0.0193339, 0.1191920, 0.9503041]]
)
_D65 = np.array([0.95047, 1.0, 1.08883])


def hex_to_rgb(color: str) -> np.ndarray:
    """ "#RRGGBB" -> sRGB in [0, 1], shape [3]."""
    h = color.strip().lstrip("#")
    if len(h) != 6 or any(c not in "0123456789abcdefABCDEF" for c in h):
        raise ValueError(f"color must be '#RRGGBB', got {color!r}")
    return np.array([int(h[i : i + 2], 16) for i in (0, 2, 4)], dtype=np.float64) / 255.0


def css_to_rgb(color: str) -> np.ndarray:
    """A colour as Plotly writes it ("#RRGGBB" or "rgb(r, g, b)") -> sRGB in [0, 1], shape [3]."""
    text = color.strip()
    if text.startswith("rgb(") and text.endswith(")"):
        parts = text[4:-1].split(",")
        if len(parts) == 3:
            return np.array([float(p) for p in parts]) / 255.0
    if text.startswith("#"):
        return hex_to_rgb(text)
    raise ValueError(f"color must be '#RRGGBB' or 'rgb(r, g, b)', got {color!r}")


def rgb_to_hex(rgb: np.ndarray) -> str:
    r, g, b = np.round(np.clip(rgb, 0.0, 1.0) * 255.0).astype(int)
    return f"#{r:02X}{g:02X}{b:02X}"


def _linear(rgb: np.ndarray) -> np.ndarray:
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def _gamma(lin: np.ndarray) -> np.ndarray:
    lin = np.clip(lin, 0.0, 1.0)
    return np.where(lin <= 0.0031308, 12.92 * lin, 1.055 * lin ** (1 / 2.4) - 0.055)


def simulate_cvd(rgb: np.ndarray, deficiency: str) -> np.ndarray:
    """sRGB values in [0, 1] (any shape ending in 3: a colour, a palette, an image) as seen with ``deficiency`` (one
    of :data:`CVD_DEFICIENCIES`)."""
    if deficiency not in CVD_MATRICES:
        raise ValueError(f"deficiency must be one of {CVD_DEFICIENCIES}, got {deficiency!r}")
    rgb = np.asarray(rgb, dtype=np.float64)
    if rgb.shape[-1] != 3:
        raise ValueError(f"rgb must end in 3 channels, got shape {rgb.shape}")
    return _gamma(_linear(rgb) @ CVD_MATRICES[deficiency].T)


def to_lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB in [0, 1] (shape [..., 3]) -> CIELAB (D65), shape [..., 3]."""
    xyz = (_linear(np.asarray(rgb, dtype=np.float64)) @ _SRGB_TO_XYZ.T) / _D65
    eps = (6 / 29) ** 3
    f = np.where(xyz > eps, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1)


def ciede2000(lab1: np.ndarray, lab2: np.ndarray) -> np.ndarray:
    """The CIEDE2000 difference of CIELAB colours (broadcast over leading dimensions), kL = kC = kH = 1."""
    L1, a1, b1 = np.moveaxis(np.asarray(lab1, dtype=np.float64), -1, 0)
    L2, a2, b2 = np.moveaxis(np.asarray(lab2, dtype=np.float64), -1, 0)
    c_mean7 = ((np.hypot(a1, b1) + np.hypot(a2, b2)) / 2) ** 7
    G = 0.5 * (1 - np.sqrt(c_mean7 / (c_mean7 + 25.0**7)))
    a1p, a2p = (1 + G) * a1, (1 + G) * a2
    C1p, C2p = np.hypot(a1p, b1), np.hypot(a2p, b2)
    h1p = np.degrees(np.arctan2(b1, a1p)) % 360
    h2p = np.degrees(np.arctan2(b2, a2p)) % 360
    chroma = C1p * C2p
    dhp = h2p - h1p
    dhp = np.where(dhp > 180, dhp - 360, np.where(dhp < -180, dhp + 360, dhp))
    dhp = np.where(chroma == 0, 0.0, dhp)
    dL, dC = L2 - L1, C2p - C1p
    dH = 2 * np.sqrt(chroma) * np.sin(np.radians(dhp / 2))
    L_mean, C_mean = (L1 + L2) / 2, (C1p + C2p) / 2
    h_sum = h1p + h2p
    h_mean = np.where(np.abs(h1p - h2p) <= 180, h_sum / 2, np.where(h_sum < 360, (h_sum + 360) / 2, (h_sum - 360) / 2))
    h_mean = np.where(chroma == 0, h_sum, h_mean)
    T = (
        1
        - 0.17 * np.cos(np.radians(h_mean - 30))
        + 0.24 * np.cos(np.radians(2 * h_mean))
        + 0.32 * np.cos(np.radians(3 * h_mean + 6))
        - 0.20 * np.cos(np.radians(4 * h_mean - 63))
    )
    S_L = 1 + 0.015 * (L_mean - 50) ** 2 / np.sqrt(20 + (L_mean - 50) ** 2)
    S_C = 1 + 0.045 * C_mean
    S_H = 1 + 0.015 * C_mean * T
    C_mean7 = C_mean**7
    R_T = -2 * np.sqrt(C_mean7 / (C_mean7 + 25.0**7)) * np.sin(np.radians(60 * np.exp(-(((h_mean - 275) / 25) ** 2))))
    return np.sqrt((dL / S_L) ** 2 + (dC / S_C) ** 2 + (dH / S_H) ** 2 + R_T * (dC / S_C) * (dH / S_H))


def cvd_distances(colors: dict[str, str], deficiency: str | None = None) -> dict[tuple[str, str], float]:
    """CIEDE2000 between every two of ``colors`` (name -> hex), as seen normally (``deficiency`` None) or with
    ``deficiency``."""
    names = list(colors)
    rgb = np.stack([hex_to_rgb(colors[n]) for n in names])
    lab = to_lab(rgb if deficiency is None else simulate_cvd(rgb, deficiency))
    return {(a, b): float(ciede2000(lab[i], lab[j])) for i, a in enumerate(names) for j, b in enumerate(names) if i < j}


def mechanism_colour(mechanism: str) -> str:
    """The colour of ``mechanism`` (a mechanism's key: "softmax", "mla", "linear_attention", …) on every chart: its
    entry's in the table."""
    return mechanisms.mechanism(mechanism).colour


def stage_mechanism(stage_key: str) -> mechanisms.Mechanism:
    """The mechanism a stage is drawn as: of the mechanisms it runs, the one whose stage it is (GPT-2: softmax; the
    hybrid: MLA, the layer it adds to KDA), else its first (the KV cache: softmax attention)."""
    s = stages.stage(stage_key)
    own = [mechanism for mechanism in s.mechanisms if mechanisms.mechanism(mechanism).stage == s.key]
    return mechanisms.mechanism(own[0] if own else s.mechanisms[0])


def stage_colour(stage_key: str) -> str:
    """The colour of a stage on every chart (see :func:`stage_mechanism`)."""
    return stage_mechanism(stage_key).colour


def mechanism_line(mechanism: str, *, width: float = 3.0) -> tuple[dict, dict]:
    """(line, marker) entries of a trace that draws ``mechanism`` (a mechanism's key): its colour, its gate's dash,
    its rule's marker — the same on every chart."""
    m = mechanisms.mechanism(mechanism)
    line = dict(color=m.colour, dash=GATE_DASH[m.gate], width=width)
    return line, dict(color=m.colour, symbol=CACHE_MARKER if m.write is None else m.write.marker, size=8)


def stage_line(stage_key: str, *, width: float = 3.0) -> tuple[dict, dict]:
    """(line, marker) entries of a trace that draws a stage: its mechanism's; a stage whose layers are of more than
    one mechanism (the hybrid) takes :data:`HYBRID_LINE`'s dash and marker, apart from the mechanism it is drawn as."""
    line, marker = mechanism_line(stage_mechanism(stage_key).key, width=width)
    if len(stages.stage(stage_key).mechanisms) > 1:
        line["dash"], marker["symbol"] = HYBRID_LINE["dash"], HYBRID_LINE["marker"]
    return line, marker


def series_line(i: int, *, width: float = 3.0) -> tuple[dict, dict]:
    """(line, marker) of the ``i``-th neutral series (a fact, a byte count, an error — anything but a mechanism)."""
    colour, dash, symbol = SERIES_STYLES[i % len(SERIES_STYLES)]
    return dict(color=colour, dash=dash, width=width), dict(color=colour, symbol=symbol, size=8)


def mechanism_names() -> dict[str, tuple[str, ...]]:
    """colour -> the names a trace drawn in it may carry: its mechanism's key and title, and the stages drawn in it."""
    names: dict[str, list[str]] = {}
    for m in mechanisms.MECHANISMS.values():
        short = m.title.split(" (")[0]
        names.setdefault(m.colour.upper(), []).extend([m.key, m.title, short])
    for s in stages.all_stages():
        names.setdefault(stage_colour(s.key).upper(), []).extend([s.key, s.title, s.title.split(" (")[0]])
    return {c: tuple(dict.fromkeys(n)) for c, n in names.items()}
