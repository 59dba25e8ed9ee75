"""Every figure builder's output passes Plotly's full validation unchanged.

The builders assemble figures as plain dicts and skip validation when wrapping them (``lineage.plots.core.figure``),
so a misspelt property would otherwise reach the browser, which ignores it silently. Here each figure is rebuilt with
validation on: an invalid property raises, and a value Plotly would have coerced (a colour scale by name, say) shows
up as a difference.
"""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from lineage import lab, plots
from lineage.plots.present import PROJECTION, projecting
from lineage.teach import real_size, stage_runs

RNG = np.random.default_rng(0)
SCHEDULE = ("kda", "kda", "mla", "kda")
LAYER_BYTES = np.cumsum(RNG.integers(1, 5, size=(6, 4)), axis=0) * 100
LENS = np.array([1, 10, 100, 1000])


@pytest.fixture(scope="module")
def runs():
    lab_settings = lab.LabSettings(d_k=8, keys="random", noise=0.0, seed=0)
    return dict(
        softmax=stage_runs.run_softmax(T=12, n_heads=2, head_dim=4, block_size=4),
        linear=stage_runs.run_stage("linear_attention", 10, 4, 5, 0, repeats=1),
        delta=stage_runs.run_stage("deltanet", 10, 4, 5, 0, repeats=1),
        mamba2=stage_runs.run_stage("mamba2", 10, 4, 5, 0, stage_runs.GateRule(alpha=0.9, alpha_jitter=1.0), repeats=1),
        kda=stage_runs.run_stage("kda", 10, 4, 5, 0, stage_runs.GateRule(alpha=0.99, alpha_min=0.5), repeats=1),
        sweep=stage_runs.chunk_size_sweep(16, 4, 0, repeats=1),
        overwrite=lab.overwrite(lab_settings, lab.OVERWRITE_GATES, n_between=2),
        capacity=lab.capacity(lab_settings, lab.CAPACITY_GATES, n_max=12, trials=1),
        topic=lab.topic_switch(lab_settings, lab.TOPIC_GATES, n_a=6, n_b=4),
        retention=lab.retention(lab_settings, lab.RETENTION_GATES, n_long=2, n_short=6),
        needle=lab.needle(lab_settings, lab.RETENTION_GATES, n_fill=8),
        scale=real_size.run_at_scale("kda", 64, 4, 2, chunk_size=8, max_points=6, repeats=1),
    )


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
    states = np.cumsum(RNG.normal(size=(T, 3, 4)), axis=0)
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
    "run_summary", "state_rows_over_run",
]  # fmt: skip


def test_every_builder_is_covered():
    exported = {name for name in plots.__all__ if name[0].islower()}
    helpers = {"animated_heatmaps", "animation_steps", "color_range", "format_bytes", "frame_indices", "heatmaps"}
    helpers |= {"play_controls", "step_marker", "style", "mixer_title"}
    assert exported - helpers == set(BUILDERS)


def all_builders(runs) -> dict:
    return (
        _softmax(runs) | _linear(runs) | _gated(runs) | _memory_and_hybrid() | _lab(runs) | _story() | _training()
    ) | _scale(runs)


@pytest.mark.parametrize("name", BUILDERS)
def test_a_builders_figure_is_what_validation_makes_of_it(runs, name):
    build = all_builders(runs)[name]
    fig = build()
    spec = json.loads(pio.to_json(fig, validate=False))
    validated = go.Figure(fig.to_dict())  # raises on any property Plotly does not know or accept
    assert json.loads(pio.to_json(validated, validate=False)) == spec


@pytest.mark.parametrize("name", BUILDERS)
def test_a_projected_figure_is_valid_too(runs, name):
    """Presenter mode's sizes (lineage.plots.present), applied while the builder builds, are all properties Plotly
    accepts."""
    build = all_builders(runs)[name]
    with projecting():
        fig = build()
    spec = json.loads(pio.to_json(fig, validate=False))
    assert spec["layout"]["font"]["size"] >= PROJECTION.text
    validated = go.Figure(fig.to_dict())
    assert json.loads(pio.to_json(validated, validate=False)) == spec


def test_style_gives_any_figure_the_house_template():
    fig = plots.style(go.Figure(go.Scatter(y=[1, 2])), title="t", height=300)
    assert fig.layout.template == go.Figure(layout=dict(template="plotly_white")).layout.template
    assert (fig.layout.title.text, fig.layout.height) == ("t", 300)


def test_a_dodged_sweep_keeps_its_ticks_at_the_true_sizes():
    """Lines drawn beside each other along x: the axis still reads the sizes that were run, nothing between them."""
    fig = plots.accuracy_sweep(
        {"softmax": ([4, 8], [0.99, 0.5]), "deltanet": ([4, 8], [0.98, 0.6])}, x_title="pairs", title="t", dodge=0.06
    )
    assert list(fig.layout.xaxis.tickvals) == [4.0, 8.0] and list(fig.layout.xaxis.ticktext) == ["4", "8"]
    assert [list(t.x) for t in fig.data] == [[3.97, 7.97], [4.03, 8.03]]
    assert [list(t.customdata) for t in fig.data] == [[4.0, 8.0], [4.0, 8.0]]
