"""Bad input raises ValueError / TypeError whose message names the argument (and says what was expected)."""

from __future__ import annotations

import itertools

import pytest
import torch

from lineage.models.layers import LinearMemoryMixer, MixerConfig
from lineage.ops.linear_attention import linear_attention
from lineage.ops.mamba2 import mamba2_ssd
from lineage.ops.recurrence import run_memory
from tests.util import EXTRA_ARGS, MODES, STAGES, call_stage, make_inputs, stage_inputs


def replace(name, change):
    """A mutation of a stage_inputs dict: input ``name`` becomes change(old value)."""

    def mutate(x, kw):
        x[name] = change(x[name])

    return mutate


def with_nan(t):
    t = t.clone()
    t.view(-1)[0] = torch.nan
    return t


def with_value(value):
    def change(t):
        t = t.clone()
        t.view(-1)[-1] = value
        return t

    return change


def other_gate_shape(g):
    """A scalar gate [B, H, T] for per-channel ops, a per-channel one [B, H, T, K] for scalar ops."""
    return g[..., 0] if g.dim() == 4 else g[..., None].expand(*g.shape, 4)


def narrow_gate(g):
    """A per-channel gate two channels wide where the keys have K = 4: a shape no op takes."""
    return g[..., :2]


# Ops that take either gate shape (Gated DeltaNet-2: per key channel, or one per head, which is Gated DeltaNet's decay;
# tests/test_gated_deltanet2.py runs both): their wrong shape is a gate of the wrong width instead.
EITHER_GATE = {"gated_deltanet2"}


def set_kw(**changes):
    def mutate(x, kw):
        kw.update(changes)

    return mutate


# (case id, the input it needs or None, exception, regex naming the argument, mutation). Inputs are
# stage_inputs(stage, B=1, H=2, T=5, K=4, V=3).
CASES = [
    ("q-rank3", None, ValueError, r"^q must have rank 4, got shape \(2, 5, 4\)", replace("q", lambda q: q[0])),
    ("v-batch", None, ValueError, r"^v must have shape \[B, H, T, V\]", replace("v", lambda v: v.repeat(2, 1, 1, 1))),
    ("k-heads", None, ValueError, r"^k must have the same shape as q", replace("k", lambda k: k[:, :1])),
    (
        "v-time",
        None,
        ValueError,
        r"^v must have shape \[B, H, T, V\].*\(1, 2, 5\)",
        replace("v", lambda v: v[:, :, :4]),
    ),
    ("k-keydim", None, ValueError, r"^k must have the same shape as q", replace("k", lambda k: k[..., :3])),
    ("q-list", None, TypeError, r"^q must be a torch.Tensor, got list", replace("q", lambda q: q.tolist())),
    ("v-int", None, TypeError, r"^v must be a floating-point tensor", replace("v", lambda v: v.long())),
    ("q-nan", None, ValueError, r"^q contains NaN", replace("q", with_nan)),
    ("v-nan", None, ValueError, r"^v contains NaN", replace("v", with_nan)),
    ("g-nan", "g", ValueError, r"^g contains NaN", replace("g", with_nan)),
    ("beta-nan", "beta", ValueError, r"^beta contains NaN", replace("beta", with_nan)),
    ("g-positive", "g", ValueError, r"^g is a log-space gate.*must be <= 0.*0\.1", replace("g", with_value(0.1))),
    ("g-other-shape", "g", ValueError, r"^g \(log-space gate\) must have shape", replace("g", other_gate_shape)),
    ("beta-negative", "beta", ValueError, r"^beta must lie in \[0, 1\].*-0\.1", replace("beta", with_value(-0.1))),
    ("beta-above-one", "beta", ValueError, r"^beta must lie in \[0, 1\].*1\.5", replace("beta", with_value(1.5))),
    ("beta-shape", "beta", ValueError, r"^beta must have shape \[B, H, T\]", replace("beta", lambda b: b[..., :4])),
    # unit gates (Gated DeltaNet-2's erase, key axis, and write, value axis): each in [0, 1], in its shape
    ("erase-nan", "erase", ValueError, r"^erase contains NaN", replace("erase", with_nan)),
    ("erase-above-one", "erase", ValueError, r"^erase must lie in \[0, 1\].*1\.5", replace("erase", with_value(1.5))),
    ("write-negative", "write", ValueError, r"^write must lie in \[0, 1\].*-0\.1", replace("write", with_value(-0.1))),
    (
        "write-shape",
        "write",
        ValueError,
        r"^write must have shape \[B, H, T, V\]",
        replace("write", lambda w: w[..., :2]),
    ),
    (
        "state-shape",
        None,
        ValueError,
        r"^initial_state must have shape",
        replace("initial_state", lambda s: s[..., :-1]),
    ),
    ("mode-fast", None, ValueError, r"^mode must be one of .*'fast'", set_kw(mode="fast")),
    ("chunk_size-0", None, ValueError, r"^chunk_size must be >= 1, got 0", set_kw(chunk_size=0)),
    ("chunk_size-minus3", None, ValueError, r"^chunk_size must be >= 1, got -3", set_kw(chunk_size=-3)),
    ("chunk_size-2.5", None, TypeError, r"^chunk_size must be an int", set_kw(chunk_size=2.5)),
    ("scale-negative", None, ValueError, r"^scale must be a positive", set_kw(scale=-1.0)),
]
MODE_FREE = {"mode-fast", "chunk_size-0", "chunk_size-minus3", "chunk_size-2.5"}  # checked before dispatch
ERROR_CASES = [
    pytest.param(
        stage,
        mode,
        exc,
        match,
        replace("g", narrow_gate) if case == "g-other-shape" and stage in EITHER_GATE else mutate,
        id=f"{stage}-{case}" + ("" if case in MODE_FREE else f"-{mode}"),
    )
    for stage, (case, needs, exc, match, mutate), mode in itertools.product(STAGES, CASES, MODES)
    if (needs is None or needs in EXTRA_ARGS[stage]) and (case not in MODE_FREE or mode == "chunk")
]


@pytest.mark.parametrize("stage, mode, exc, match, mutate", ERROR_CASES)
def test_stage_op_rejects_bad_input_naming_the_argument(stage, mode, exc, match, mutate):
    x = stage_inputs(stage, 1, 2, 5, 4, 3)
    kw = {"mode": mode}
    call_stage(stage, x, **kw)  # valid as made
    mutate(x, kw)
    with pytest.raises(exc, match=match):
        call_stage(stage, x, **kw)


def test_linear_attention_rejects_unknown_feature_map_and_unnormalisable_identity():
    x = stage_inputs("linear_attention", 1, 2, 5, 4, 3, state=False)
    with pytest.raises(ValueError, match=r"^feature_map must be one of .*'softmax'"):
        linear_attention(x["q"], x["k"], x["v"], feature_map="softmax")
    with pytest.raises(ValueError, match=r"^feature_map='identity'.*normalize=False"):
        linear_attention(x["q"], x["k"], x["v"], feature_map="identity")


@pytest.mark.parametrize("mode", MODES)
def test_shared_recurrence_rejects_unknown_rule_and_misplaced_beta(mode):
    x = make_inputs(1, 2, 5, 4, 3, rule="delta", gate="scalar")
    q, k, v, g, beta = (x[n] for n in ("q", "k", "v", "g", "beta"))
    with pytest.raises(ValueError, match=r"^rule must be 'additive' or 'delta', got 'softmax'"):
        run_memory(q, k, v, g, beta, rule="softmax", mode=mode)
    with pytest.raises(ValueError, match=r"^beta is required for the delta rule"):
        run_memory(q, k, v, g, None, rule="delta", mode=mode)
    with pytest.raises(ValueError, match=r"^beta only applies to the delta rule"):
        run_memory(q, k, v, g, beta, rule="additive", mode=mode)


def ssd_inputs(H=4, G=2):
    gen = torch.Generator().manual_seed(0)
    batch, T, N, P = 1, 5, 3, 2
    return {
        "x": torch.randn(batch, H, T, P, generator=gen),
        "dt": torch.rand(batch, H, T, generator=gen) + 0.1,
        "A": -torch.rand(H, generator=gen) - 0.1,
        "B": torch.randn(batch, G, T, N, generator=gen),
        "C": torch.randn(batch, G, T, N, generator=gen),
    }


SSD_CASES = [
    ("dt-zero", ValueError, r"^dt \(Δ\) must be > 0", replace("dt", with_value(0.0))),
    ("dt-negative", ValueError, r"^dt \(Δ\) must be > 0", replace("dt", with_value(-0.5))),
    ("dt-shape", ValueError, r"^dt must have shape \[batch, H, T\]", replace("dt", lambda dt: dt[..., :4])),
    ("dt-nan", ValueError, r"^dt contains NaN", replace("dt", with_nan)),
    ("A-zero", ValueError, r"^A must be < 0", replace("A", with_value(0.0))),
    ("A-positive", ValueError, r"^A must be < 0", replace("A", with_value(0.5))),
    ("A-shape", ValueError, r"^A must have shape \[H\] = \[4\]", replace("A", lambda A: A[:3])),
    (
        "B-groups-3",
        ValueError,
        r"^B must have shape \[batch, G, T, N\].*G dividing H=4",
        replace("B", lambda B: B[:, :1].repeat(1, 3, 1, 1)),
    ),
    (
        "C-groups-3",
        ValueError,
        r"^C must have shape \[batch, G, T, N\].*G dividing H=4",
        replace("C", lambda C: C[:, :1].repeat(1, 3, 1, 1)),
    ),
    ("B-time", ValueError, r"^B must have shape", replace("B", lambda B: B[:, :, :4])),
    ("C-other-N", ValueError, r"^B and C must have the same shape", replace("C", lambda C: C[..., :2])),
    ("x-rank3", ValueError, r"^x must have rank 4", replace("x", lambda x: x[0])),
]


@pytest.mark.parametrize("exc, match, mutate", [pytest.param(*c[1:], id=c[0]) for c in SSD_CASES])
def test_mamba2_ssd_rejects_bad_input_naming_the_argument(exc, match, mutate):
    inputs = ssd_inputs()
    mamba2_ssd(**inputs)  # valid as made
    mutate(inputs, {})
    with pytest.raises(exc, match=match):
        mamba2_ssd(**inputs)


def test_mixer_rejects_unknown_stage_bad_config_and_bad_x():
    with pytest.raises(
        ValueError, match=r"^mechanism must be a linear-memory mechanism, one of 'linear_attention'.*'transformer'"
    ):
        LinearMemoryMixer("transformer")
    with pytest.raises(ValueError, match=r"^n_heads must be >= 1, got 0"):
        LinearMemoryMixer("kda", MixerConfig(n_heads=0))
    mixer = LinearMemoryMixer("kda", MixerConfig(d_model=16, n_heads=2, head_k=4, head_v=4, gate_rank=4))
    with pytest.raises(ValueError, match=r"^x must have shape \[B, T, d_model=16\], got \(1, 3, 8\)"):
        mixer(torch.randn(1, 3, 8))
    with pytest.raises(ValueError, match=r"^x must have rank 3"):
        mixer(torch.randn(3, 16))
