"""At real size: a linear-memory stage's op over tens of thousands of tokens, and what of it can be drawn.

The stage pages animate a state of a few channels over a few dozen steps, which a browser can show cell by cell. A
real layer has heads of 64–128 channels (Kimi Linear's KDA: 32 heads of 128) and reads tens of thousands of tokens;
no chart can show every cell of every state of such a run. So this module runs the stage's public op (its chunked
form, :meth:`lineage.mechanisms.Mechanism.call`) at such sizes on the live device and returns four kinds of result:

* exact — the first steps of head 0, every state, from the traced recurrence
  (:func:`lineage.ops.recurrence.recurrent_memory`), checked against the op's own state after those steps;
* summarised — the whole run, segment by segment: the sequence is cut into at most ``max_points`` segments of whole
  chunks, and the op runs one segment at a time from the state the last one returned (``initial_state`` /
  ``output_final_state``, the package's contract). After each segment: ‖S‖ of every head and the norm of each key row
  of head 0's state; over each segment: the mean and the largest ‖o_t‖ of head 0;
* measured — the wall time of one call over the whole sequence (:mod:`lineage.measure.timing`), and tokens per second;
* computed — the state's bytes against a KV cache of the same tokens, heads and head dims.

Inputs are drawn in process from the seed (on the device's own generator) as the stage's layer feeds its op
(:func:`lineage.inputs.layer_inputs`): q, k, v ~ N(0, 1), with q and k L2-normalised where the layer normalises them
(the table's ``LayerOptions.l2norm``); a gate is g = logsigmoid(N(0, 1)) / GATE_DIVISOR per head or per key channel,
β = sigmoid(N(0, 1)) for the delta rule. Every run goes through :func:`lineage.inputs.run_mechanism`, the one display
path: the op by :meth:`lineage.mechanisms.Mechanism.call`, the first steps by the traced reference loop.
Nothing here imports streamlit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from lineage import checks, mechanisms
from lineage.device import device_info, get_device
from lineage.inputs import GATE_DIVISOR, as_recurrence, layer_inputs, run_mechanism
from lineage.measure.timing import timed
from lineage.mechanisms import Mechanism
from lineage.numerics import rel_rms
from lineage.ops.recurrence import default_chunk_size

MAX_POINTS = 256  # segments of a whole run: a few hundred points per line, a K × 256 heatmap
FIRST_STEPS = 32  # steps of head 0 drawn exactly (the stage pages' animations go to 64)
FIRST_STEP_CELLS = 2**17  # … and at most this many state cells in all: 32 steps of 64 × 64, 8 of 128 × 128 (~1 MB)
STATE_BYTES_PER_NUMBER = 4  # the op computes in fp32 (lineage.ops.recurrence), and so does a cache compared at fp32


@dataclass(frozen=True)
class ScaleRun:
    """One stage at real size, as numpy: what a page can draw of it. B = 1; H heads of K = V channels."""

    stage: str
    T: int
    H: int
    K: int
    V: int  # value channels of the inputs (the state may carry one more: a normaliser column)
    state_V: int  # columns of the state: V, or V + 1 where the state carries the normaliser z (LayerOptions.normalize)
    chunk_size: int
    segment_ends: np.ndarray  # [n] token count after each segment; the last is T
    state_norm: np.ndarray  # [H, n] ‖S‖ (Frobenius) of every head after each segment
    row_norms: np.ndarray  # [n, K] head 0: ‖S[c, :]‖ of each key row c after each segment
    output_mean: np.ndarray  # [n] head 0: mean ‖o_t‖ over the segment's tokens
    output_max: np.ndarray  # [n] head 0: largest ‖o_t‖ over the segment's tokens
    first_states: np.ndarray  # [n_first, K, state_V] head 0: the state after each of the first steps, exactly
    first_decay: np.ndarray | None  # [n_first, K] head 0: α applied to each key row at those steps (None: no gate)
    err_first: float  # rel. difference of the traced state after the first steps and the op's state there
    err_segments: float  # rel. difference of the final state run segment by segment and in one call
    seconds: float  # median wall time of one call of the op over all T tokens and H heads
    repeats: int  # timed calls behind ``seconds``
    device: str  # label of the device that ran the op
    seed: int

    @property
    def segment(self) -> int:
        """Tokens per segment (the last may be shorter): how many steps one point of a summary stands for."""
        return int(self.segment_ends[0])

    @property
    def n_first(self) -> int:
        return int(self.first_states.shape[0])

    @property
    def tokens_per_s(self) -> float:
        """Tokens of the sequence per second (each through all H heads)."""
        return self.T / self.seconds

    @property
    def state_bytes(self) -> int:
        """What the layer keeps between tokens: H states of K × state_V numbers, fp32."""
        return self.H * self.K * self.state_V * STATE_BYTES_PER_NUMBER

    @property
    def kv_cache_bytes(self) -> int:
        """What a softmax layer of the same heads and head dims keeps after T tokens: H · T · (K + V) numbers, fp32."""
        return self.H * self.T * (self.K + self.V) * STATE_BYTES_PER_NUMBER


def linear_mechanism(mechanism: str) -> Mechanism:
    """The table's entry for ``mechanism``, a linear-memory mechanism's key; a ValueError naming it otherwise."""
    m = mechanisms.mechanism(mechanism)
    if not m.is_linear:
        raise ValueError(f"mechanism must be a linear-memory mechanism, got {mechanism!r} (its memory is a cache)")
    return m


def segment_ends(T: int, chunk_size: int, max_points: int = MAX_POINTS) -> np.ndarray:
    """Where the segments of a run of T tokens end: at most ``max_points`` of them, each a whole number of chunks
    (the last one may be shorter), together covering tokens 0 … T − 1.

    With N = ⌈T / C⌉ chunks, each segment takes s = ⌈N / max_points⌉ chunks, so there are ⌈N / s⌉ ≤ max_points.
    """
    checks.positive_int("T", T)
    checks.chunk_size(chunk_size)
    checks.positive_int("max_points", max_points)
    chunks = -(-T // chunk_size)
    segment = chunk_size * -(-chunks // max_points)
    return np.append(np.arange(segment, T, segment), T).astype(np.int64)


def first_step_count(T: int, K: int, state_V: int, first_steps: int = FIRST_STEPS) -> int:
    """How many of the first steps are drawn exactly: at most ``first_steps`` and T, and at most FIRST_STEP_CELLS
    state cells in all (never fewer than one step)."""
    return max(1, min(first_steps, T, FIRST_STEP_CELLS // (K * state_V)))


def inputs_text(mechanism: str) -> str:
    """How :func:`lineage.inputs.layer_inputs` draws a stage's inputs, as one sentence for a page."""
    m = linear_mechanism(mechanism)
    parts = ["q, k, v ~ N(0, 1)" + (", q and k L2-normalised as the stage's layer does" if m.layer.l2norm else "")]
    if m.layer.feature_map is not None:
        parts.append(f"the op applies its feature map ({m.layer.feature_map}) to q and k")
    if m.takes("g"):  # the tensors of its op contract, as layer_inputs draws them
        where = "per key channel" if m.input_dims("g")[-1] == "K" else "per head"
        parts.append(f"one gate {where} and step, g = logsigmoid(N(0, 1)) / {GATE_DIVISOR:g}")
    if m.takes("beta"):
        parts.append("β = sigmoid(N(0, 1)) per head and step")
    for u in m.unit_gates:  # Gated DeltaNet-2's erase (key axis) and write (value axis) gates
        axis = "key" if u.dims[-1] == "K" else "value"
        parts.append(f"a {u.name} gate = sigmoid(N(0, 1)) per {axis} channel and step")
    return "; ".join(parts) + "."


def _time_slice(x: torch.Tensor | None, start: int, end: int) -> torch.Tensor | None:
    """Steps start … end − 1 of a [B, H, T, ...] or [B, H, T] tensor."""
    return None if x is None else x[:, :, start:end]


def run_at_scale(
    mechanism: str,
    T: int,
    K: int,
    heads: int,
    seed: int = 0,
    *,
    chunk_size: int | None = None,
    max_points: int = MAX_POINTS,
    first_steps: int = FIRST_STEPS,
    repeats: int | None = None,
) -> ScaleRun:
    """Run a stage's op over T tokens, ``heads`` heads of K = V channels, on the live device (see the module).

    Args:
        mechanism: a linear-memory mechanism of :mod:`lineage.mechanisms` (its key).
        T, K, heads: sizes, each ≥ 1.
        seed: draws the inputs (:func:`lineage.inputs.layer_inputs`, on the device's generator).
        chunk_size: the op's chunk length (None: the device's, :func:`lineage.ops.recurrence.default_chunk_size`).
        max_points: most segments of the summaries (:func:`segment_ends`).
        first_steps: most steps of head 0 drawn exactly (:func:`first_step_count`).
        repeats: timed calls of the whole op (None: 1 on a CPU, where one call is the budget, 3 on a GPU).
    """
    m = linear_mechanism(mechanism)
    for name, value in (("T", T), ("K", K), ("heads", heads), ("first_steps", first_steps)):
        checks.positive_int(name, value)
    device = get_device()
    C = default_chunk_size(device) if chunk_size is None else checks.chunk_size(chunk_size)
    ends = segment_ends(T, C, max_points)
    repeats = (1 if device.type == "cpu" else 3) if repeats is None else checks.positive_int("repeats", repeats)
    drawn = layer_inputs(m, heads, T, K, torch.Generator(device=device).manual_seed(int(seed)))
    q, k, v, g, beta = (drawn[name] for name in ("q", "k", "v", "g", "beta"))
    own = {u.name: drawn[u.name] for u in m.unit_gates}  # its contract's tensors beside g and β (by name)

    def op(start: int, end: int, state: torch.Tensor | None):
        part = (_time_slice(x, start, end) for x in (q, k, v, g, beta))
        sliced = {name: _time_slice(x, start, end) for name, x in own.items()}
        return run_mechanism(m, *part, initial_state=state, output_final_state=True, chunk_size=C, **sliced)

    with torch.inference_mode():
        # 1. segment by segment, from the state the previous segment returned: the summaries (kept on the device and
        #    fetched once, so a GPU is not made to wait after every segment). Also the warm-up of the timed call.
        state, starts = None, np.concatenate([[0], ends[:-1]])
        norms, rows, out_mean, out_max = [], [], [], []
        with checks.values_checked():  # drawn here, in range by construction
            for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
                o, state = op(start, end, state)
                o_norm = o[0, 0].norm(dim=-1)  # (tokens,) head 0
                out_mean.append(o_norm.mean())
                out_max.append(o_norm.max())
                norms.append(state[0].flatten(1).norm(dim=-1))  # (H,)
                rows.append(state[0, 0].norm(dim=-1))  # (K,) head 0
        segmented = state
        # 2. one call over the whole sequence, through the op's public checks, as a caller would make it: the timing
        times = []
        for _ in range(repeats):
            whole, seconds = timed(lambda: op(0, T, None)[1], device)  # the output is let go at once
            times.append(seconds)
        # 3. the first steps of head 0, exactly: the traced recurrence, on the CPU
        n_first = first_step_count(T, K, K + 1 if m.layer.normalize else K, first_steps)
        head0 = [None if x is None else x[:1, :1, :n_first].float().cpu() for x in (q, k, v, g, beta)]
        own0 = {name: x[:1, :1, :n_first].float().cpu() for name, x in own.items()}
        rq, rk, rv = as_recurrence(m, *head0[:3])
        _, _, trace = run_mechanism(m, rq, rk, rv, head0[3], head0[4], trace=True, **own0)
        _, op_state = run_mechanism(m, *head0, output_final_state=True, chunk_size=C, **own0)
    first_states = trace.states[0, 0]
    return ScaleRun(
        stage=m.key,
        T=T,
        H=heads,
        K=K,
        V=K,
        state_V=first_states.shape[-1],
        chunk_size=C,
        segment_ends=ends,
        state_norm=torch.stack(norms, dim=1).cpu().numpy(),
        row_norms=torch.stack(rows).cpu().numpy(),
        output_mean=torch.stack(out_mean).cpu().numpy(),
        output_max=torch.stack(out_max).cpu().numpy(),
        first_states=first_states,
        first_decay=trace.decay[0, 0] if m.takes("g") else None,
        err_first=rel_rms(torch.from_numpy(first_states[-1]), op_state[0, 0]),
        err_segments=rel_rms(segmented, whole),
        seconds=float(np.median(times)),
        repeats=repeats,
        device=device_info(device).label,
        seed=int(seed),
    )
