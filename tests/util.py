"""What the tests share: for the numerical tests one comparison helper and one tolerance table, and the package's seeded
recipe for the inputs of every linear-memory op (``lineage.inputs.random_inputs``, with a gate of
``lineage.inputs.RANDOM_GATE``: ``make_inputs`` for a cell of the grid, ``stage_inputs`` for a mechanism);
for the figure tests the house rules every animation keeps, random states to draw, and every builder ready to build
(``all_builders``); for the claims, the claim each stage makes on a story (``claim_of``); for the compiled code, where
a call ran while another thread asked for the Python form (``threads_that_ran_compiled``)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import torch

from lineage import plots
from lineage.inputs import RANDOM_GATE, draw_inputs
from lineage.mechanisms import default_op_inputs, linear_mechanisms, mechanism
from lineage.numerics import rel_rms
from lineage.ops import native
from lineage.plots.core import TEXT_MAX_CELLS, TEXT_MAX_SIDE
from lineage.teach import claims, stage_runs, units

# Measured: fp64 agreement between forms is ~1e-15; fp32 is ~1e-6 (strong decay ~2e-5). Bounds keep headroom.
TOL = {torch.float64: 1e-10, torch.float32: 1e-4, torch.bfloat16: 2e-2, torch.float16: 5e-3}


def assert_close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype | None = None, tol=None, what=""):
    """Fail unless relative RMS error is within the tolerance for ``dtype`` (default: expected's dtype)."""
    bound = tol if tol is not None else TOL[dtype or expected.dtype]
    if actual.shape != expected.shape:
        raise AssertionError(f"{what} shape mismatch: {tuple(actual.shape)} vs {tuple(expected.shape)}")
    err = rel_rms(actual, expected)
    assert err <= bound, f"{what} relative RMS error {err:.3e} exceeds {bound:.1e}"


MODES = ("recurrent", "chunk", "parallel")
DTYPE_NAME = {torch.float64: "fp64", torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}

# The grid in lineage/ops/recurrence.py's docstring: every linear mechanism of the table is one (write rule, gate)
# cell of the shared recurrence.
STAGE_CELL = {m.key: (m.rule, m.gate) for m in linear_mechanisms()}
CELLS = list(STAGE_CELL.values())
GATED_STAGES = tuple(m.key for m in linear_mechanisms() if m.gate != "none")


def make_inputs(B=2, H=3, T=37, K=8, V=6, *, rule="additive", gate="none", dtype=torch.float64, state=True, seed=0):
    """Seeded inputs for one (rule, gate) cell, drawn in fp64 and then cast, so every dtype sees the same numbers: the
    package's recipe (``lineage.inputs.random_inputs``: q ~ N(0, 1), unit keys, so that I − β k kᵀ is a
    contraction, β uniform in [0, 1), a state ~ N(0, 1)), then the log-gate ``lineage.inputs.RANDOM_GATE``
    (log σ(x + 2): per-step decays mostly between 0.7 and 0.99) from the same generator.

    Returns a dict with q, k [B, H, T, K], v [B, H, T, V], g ([B, H, T] | [B, H, T, K] | None),
    beta ([B, H, T] | None), initial_state ([B, H, K, V] | None) and any unit gates of the contract, by name.
    """
    return _cast(_draw(default_op_inputs(rule, gate), B, H, T, K, V, seed), dtype, state)


def _draw(contract, B, H, T, K, V, seed) -> dict:
    """The package's checking inputs (``lineage.inputs.draw_inputs``) for an op contract, in fp64."""
    gen = torch.Generator().manual_seed(seed)
    return draw_inputs(contract, {"B": B, "H": H, "T": T, "K": K, "V": V}, gen, gate=_random_gate)


def _random_gate(shape, gen):
    return RANDOM_GATE.draw(shape, gen, dtype=torch.float64)


def _cast(x: dict, dtype, state: bool) -> dict:
    """Cast the fp64 draw to ``dtype`` (the same numbers in every dtype); drop the initial state unless ``state``."""
    x["initial_state"] = x["initial_state"] if state else None
    return {name: None if t is None else t.to(dtype) for name, t in x.items()}  # any unit gates too, by name


STAGES = tuple(m.key for m in linear_mechanisms())
# The positional arguments after q, k, v that each op takes, from its entry's op contract (Mechanism.op_contract).
EXTRA_ARGS = {m.key: tuple(x.name for x in m.op_contract[3:]) for m in linear_mechanisms()}


def stage_inputs(stage, B=2, H=3, T=37, K=8, V=6, *, dtype=torch.float64, state=True, seed=0):
    """make_inputs for a mechanism: the tensors of its op contract. Normalised linear attention carries its
    normaliser z as an extra value column of the state, so its initial state is [B, H, K, V + 1] with z > 0 (the
    normaliser stays positive)."""
    m = mechanism(stage)
    x = _cast(_draw(m.op_contract, B, H, T, K, V, seed), dtype, state)
    if m.keeps_normaliser and state:
        S0 = x["initial_state"]
        x["initial_state"] = torch.cat([S0, S0[..., :1].abs()], dim=-1)
    return x


def call_stage(stage, x, **kw):
    """Call the stage's public op on a stage_inputs dict, returning (o, S_final)."""
    kw = {"initial_state": x["initial_state"], "output_final_state": True} | kw
    m = mechanism(stage)
    return m.op(*m.op_args(x), **kw)


# ---- figures --------------------------------------------------------------------------------------------------------

FIGURE_RNG = np.random.default_rng(0)


def heat(trace) -> np.ndarray:
    """A heatmap trace's z as a float array."""
    return np.asarray(trace.z, dtype=float)


def states(T: int, K: int = 3, V: int = 4, scale: float = 1.0) -> np.ndarray:
    """Random states [T, K, V], scaled by ``scale``."""
    return scale * FIGURE_RNG.normal(size=(T, K, V))


def assert_animation_rules(fig, n_frames: int) -> None:
    """The house rules every animation must keep.

    Frames follow the number of steps (at most MAX_FRAMES, the last step kept), one colour range per panel fixed
    across frames, signed panels centred on zero, a colour bar on every panel, values printed in small cells.
    """
    assert len(fig.frames) == n_frames
    assert len(fig.layout.sliders[0].steps) == n_frames
    assert [b.label for b in fig.layout.updatemenus[0].buttons] == ["▶ Play", "❚❚ Pause"]
    for i, first in enumerate(fig.data):
        ranges = {(f.data[i].zmin, f.data[i].zmax, f.data[i].zmid) for f in fig.frames}
        assert ranges == {(first.zmin, first.zmax, first.zmid)}, f"panel {i}: colour range changes across frames"
        assert first.zmin < first.zmax
        signed = first.zmin < 0
        assert (first.zmid == 0.0) if signed else first.zmid is None
        assert first.zmin == -first.zmax if signed else True
        for frame in fig.frames:
            assert frame.data[i].showscale, f"panel {i}: colour bar hidden"
            shape = heat(frame.data[i]).shape
            small = np.prod(shape) <= TEXT_MAX_CELLS and max(shape) <= TEXT_MAX_SIDE
            assert (frame.data[i].text is not None) == small


# ---- every figure builder, for the tests that build them all (test_plots_valid.py, test_present.py) ----------------

BUILDER_RNG = np.random.default_rng(0)
SCHEDULE = ("kda", "kda", "mla", "kda")
LAYER_BYTES = np.cumsum(BUILDER_RNG.integers(1, 5, size=(6, 4)), axis=0) * 100
LENS = np.array([1, 10, 100, 1000])


def _softmax(r):
    sm = r["softmax"]
    cost, tiled = sm.cost, sm.tiled
    return {
        "attention_growth": lambda: plots.attention_growth(sm.trace.attn, start=3, title="t"),
        "recompute_cost": lambda: plots.recompute_cost(
            cost.position,
            (cost.rows_recompute, cost.rows_cached),
            (cost.flops_recompute, cost.flops_cached),
            step=3,
            title="t",
        ),
        "kv_cache_growth": lambda: plots.kv_cache_growth(sm.trace.keys, sm.trace.values, sm.trace.attn, start=3),
        "cache_traffic": lambda: plots.cache_traffic(sm.trace.cache_bytes, step=2, title="t"),
        "online_softmax": lambda: plots.online_softmax(
            sm.scores, tiled.q_block, tiled.k_block, tiled.m_steps, tiled.l_steps, tiled.block_size, title="t"
        ),
        "io_bytes": lambda: plots.io_bytes(sm.io_seq_lens, sm.io_standard, sm.io_tiled, title="t"),
    }


def _linear(r):
    la, dn = r["linear"], r["delta"]
    rec = stage_runs.recall(la)
    return {
        "write_and_state": lambda: plots.write_and_state(la.k, la.trace.delta[0, 0], la.states, start=4, title="t"),
        "delta_rule_steps": lambda: plots.delta_rule_steps(
            dn.k, dn.trace.read[0, 0], dn.v, dn.trace.delta[0, 0], dn.states, start=2, title="t"
        ),
        "recall_and_norm": lambda: plots.recall_and_norm(rec.by_step, rec.state_norm, step=3, title="t"),
        "recall_by_age": lambda: plots.recall_by_age({"a": rec.by_age, "b": 2 * rec.by_age}, emphasis="a"),
        "mixing": lambda: plots.mixing(stage_runs.mixing_matrix(la), title="t"),
        "chunk_schedule": lambda: plots.chunk_schedule(stage_runs.mixing_matrix(dn), 4, title="t"),
        "chunk_timing": lambda: plots.chunk_timing(
            r["sweep"].chunk_sizes, r["sweep"].seconds, r["sweep"].model_flops, chosen=4, title="t"
        ),
    }


def _gated(r):
    m2, kd = r["mamba2"], r["kda"]
    return {
        "over_time": lambda: plots.over_time(
            {"a": np.linspace(0, 1, 10), "b": np.ones(10)}, title="t", y_title="y", step=3, y_range=(0, 1.05)
        ),
        "gates_by_channel": lambda: plots.gates_by_channel(kd.trace.decay[0, 0], title="t", step=4),
        "retention_map": lambda: plots.retention_map(stage_runs.retention(m2.g)[:, :, 0], title="t"),
        "channel_retention": lambda: plots.channel_retention(
            {"a": stage_runs.retention(kd.g)[0], "b": stage_runs.retention(m2.g)[0]}, title="t"
        ),
        "decay_mask_and_attention": lambda: plots.decay_mask_and_attention(
            stage_runs.decay_mask(m2.g)[:, :, 0], stage_runs.mixing_matrix(m2), title="t", step=3
        ),
        "state_animation": lambda: plots.state_animation(
            {"a": kd.states}, gate=kd.trace.decay[0, 0], title="t", start=5
        ),
    }


def _memory_and_hybrid():
    return {
        "cache_vs_length": lambda: plots.cache_vs_length(
            LENS, {"a": LENS * 10}, gpu_memory={"H100": 8e10, "A100": 8e10}, mark_len=100
        ),
        "per_layer_bars": lambda: plots.per_layer_bars(SCHEDULE, np.array([0, 0, 5000, 0]), np.full(4, 100)),
        "decode_time_vs_context": lambda: plots.decode_time_vs_context(
            LENS, {"KV": LENS * 0.1, "KDA": np.ones(4)}, floor_ms=LENS * 0.01
        ),
        "bandwidth_fraction": lambda: plots.bandwidth_fraction(
            LENS, np.array([0.1, 0.5, 0.9, 1.1]), bound_bytes_per_s=1e10
        ),
        "decode_bytes_animation": lambda: plots.decode_bytes_animation(SCHEDULE, LAYER_BYTES, title="t", start=2),
        "bytes_by_layer_and_time": lambda: plots.bytes_by_layer_and_time(SCHEDULE, LAYER_BYTES, title="t", step=2),
        "layer_schedule_strip": lambda: plots.layer_schedule_strip(SCHEDULE, title="t"),
        "memory_by_stage": lambda: plots.memory_by_stage(
            LENS,
            {"gpt2": LENS * 10.0, "kv_cache": LENS * 10.0, "kda": np.full(4, 1e5), "gla": np.full(4, 9e4)},
            notes={"kda": "a note"},
            baseline=("all-MLA", "the baseline", LENS * 3.0),
            title="t",
        ),
    }


def _training():
    curves = {"deltanet": ([0, 25, 50], [0.1, 0.6, 0.95]), "identity": ([0, 25, 50], [0.1, 0.1, 0.12])}
    sweep = {"kda": ([2.0, 4.0, 8.0], [0.99, 0.98, 0.9]), "hybrid": ([2.0, 4.0, 8.0], [0.99, 0.99, 0.97])}
    return {
        "training_curves": lambda: plots.training_curves(curves, title="Training", chance=0.125),
        "accuracy_sweep": lambda: plots.accuracy_sweep(
            sweep, x_title="pairs", title="Accuracy against pairs", chance=0.125, live={"kda": ([4.0], [0.97])}
        ),
    }


def _story():
    T = 8
    states = np.cumsum(BUILDER_RNG.normal(size=(T, 3, 4)), axis=0)
    ticks = [f"t{t}" for t in range(T)]
    return {
        "story_memory": lambda: plots.story_memory(
            states,
            row_labels=["a", "b", "c"],
            column_labels=["w", "x", "y", "z"],
            step_labels=ticks,
            sentences=[f"<b>Step {t}</b>" for t in range(T)],
            held={"a → w": np.linspace(0, 1, T)},
            start=3,
        ),
        "attention_story": lambda: plots.attention_story(
            np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None],
            step_labels=ticks,
            sentences=[f"Step {t}" for t in range(T)],
            series={"rows": np.arange(1.0, T + 1)},
            series_title="rows",
            y_title="rows",
        ),
        "decode_ratio_curves": lambda: plots.decode_ratio_curves(
            np.array([1, 4, 16]), {"1M": np.array([2.0, 3.0, 3.5])}, paper=6.0, ceiling=3.9
        ),
        "crossover": lambda: plots.crossover(
            np.arange(1, 5),
            {"MLA": np.arange(1, 5) * 10.0, "KDA": np.full(4, 60.0)},
            np.array([4.0, 8.0, 16.0]),
            {"MLA": np.array([40.0, 80.0, 160.0]), "KDA": np.full(3, 60.0)},
            crossing=6.0,
        ),
    }


def _lab(r):
    return {
        "overwrite_vectors": lambda: plots.overwrite_vectors(r["overwrite"]),
        "overwrite_blend": lambda: plots.overwrite_blend(r["overwrite"]),
        "capacity_curves": lambda: plots.capacity_curves(r["capacity"]),
        "topic_switch_figure": lambda: plots.topic_switch_figure(r["topic"]),
        "retention_figure": lambda: plots.retention_figure(r["retention"]),
        "needle_curves": lambda: plots.needle_curves(r["needle"]),
    }


def _scale(r):
    sc = r["scale"]
    return {
        "run_summary": lambda: plots.run_summary(
            sc.segment_ends, {"a": sc.output_mean, "b": sc.output_max}, title="t", y_title="y"
        ),
        "state_rows_over_run": lambda: plots.state_rows_over_run(sc.segment_ends, sc.row_norms, title="t"),
    }


BUILDERS = [
    "attention_growth", "recompute_cost", "kv_cache_growth", "cache_traffic", "online_softmax", "io_bytes",
    "write_and_state", "delta_rule_steps", "recall_and_norm", "recall_by_age", "mixing", "chunk_schedule",
    "chunk_timing", "over_time", "gates_by_channel", "retention_map", "channel_retention", "decay_mask_and_attention",
    "state_animation", "cache_vs_length", "per_layer_bars", "decode_time_vs_context", "bandwidth_fraction",
    "decode_bytes_animation", "bytes_by_layer_and_time", "memory_by_stage", "overwrite_vectors", "overwrite_blend",
    "capacity_curves", "topic_switch_figure", "retention_figure", "needle_curves",
    "story_memory", "attention_story", "decode_ratio_curves", "crossover", "training_curves", "accuracy_sweep",
    "run_summary", "state_rows_over_run", "layer_schedule_strip",
]  # fmt: skip


def all_builders(runs) -> dict:
    """Builder name -> a function that builds its figure from ``runs`` (the fixture of tests/conftest.py)."""
    return (
        _softmax(runs) | _linear(runs) | _gated(runs) | _memory_and_hybrid() | _lab(runs) | _story() | _training()
    ) | _scale(runs)


# ---- claims on a written story (lineage.teach.claims) ----------------------------------------------------------------

KNOBS = claims.Knobs()  # β = 1, every token keeps α = 1, the switch α = 0: the pages' defaults


def claim_of(stage_key: str, story, knobs: claims.Knobs = KNOBS) -> claims.StageClaim:
    """The claim the page of ``stage_key`` makes on ``story``, against the stage it answers, as lineage computes it
    (the stage's unit: ``lineage.teach.units.stage_claim``)."""
    return units.stage_claim(stage_key, claims.trace_story(stage_key, story, knobs), story, knobs)


def threads_that_ran_compiled(monkeypatch, name: str, call: Callable[[], object]) -> list[str]:
    """The threads in which ``native.<name>`` ran while ``call()`` ran twice: in a thread named "other-session", and
    then in this one inside ``native.python_form()`` (``bench --native python`` in one session must switch only its
    own runs to the Python form, never another session's)."""
    ran = []
    real = getattr(native, name)
    monkeypatch.setattr(native, name, lambda *a, **kw: ran.append(threading.current_thread().name) or real(*a, **kw))
    inside, other = threading.Event(), threading.Event()

    def compiled_run():
        inside.wait(10)
        call()
        other.set()

    worker = threading.Thread(target=compiled_run, name="other-session")
    worker.start()
    with native.python_form():
        assert native.forced_python()
        inside.set()
        assert other.wait(10)
        call()  # this thread: the Python form
    worker.join()
    assert not native.forced_python()
    return ran
