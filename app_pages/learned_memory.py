"""Learned memory: train tiny models of every stage on recall tasks, live, and open up what training made of them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import streamlit as st

from lineage import plots
from lineage.device import device_info
from lineage.models.lm import CONTROLS, MIXERS, LMConfig, learned_layers
from lineage.plots import learned_memory as learned
from lineage.train import findings, loop
from lineage.train.findings import FRONT_END_CHOICES, FRONT_END_TITLES, PLATEAU_TEXT
from lineage.train.loop import LIVE_MIXERS, LIVE_MODEL, LIVE_TASK, LIVE_TRAINING, TrainConfig, TrainResult
from lineage.train.tasks import TASK_SOURCES, TASK_TITLES, TASKS, TaskConfig, make_batch
from ui import limits, links
from ui.caps import caps as device_caps
from ui.controls import controls_row
from ui.display import chart, prose, what_to_notice
from ui.running import BUSY_TEXT, run_or_stop, stop_page
from ui.session import device_label, seed

RECORD = findings.RECORD  # python -m lineage sweep data/learned_memory_grid_cpu.json --out …


@st.cache_data(max_entries=6, ttl=3600, show_spinner=False)
def record(mtime: float, path: str = str(RECORD)) -> list[dict]:
    """A recorded sweep's finished points (re-read when the file changes)."""
    return learned.read(path)


def read(path: Path) -> list[dict]:
    """The record at ``path``, or nothing where this copy of the app has none."""
    return record(path.stat().st_mtime, str(path)) if path.exists() else []


@st.cache_data(max_entries=6, ttl=3600, show_spinner=False)
def grid_size(mtime: float, path: str) -> int | None:
    """How many points a grid file holds (re-read when the file changes)."""
    return learned.grid_size(path)


def cached_size(path: Path) -> int | None:
    """:func:`grid_size` of the file at ``path``; None where this copy lacks it."""
    return grid_size(path.stat().st_mtime, str(path)) if path.exists() else None


def curves_of(results: dict[str, TrainResult]) -> dict:
    return {m: (r.eval_step, r.eval_accuracy) for m, r in results.items()}


def show(blocks: tuple[learned.Block, ...]) -> None:
    """The recorded part's blocks (lineage.plots.learned_memory), drawn the Streamlit way."""
    for block in blocks:
        if isinstance(block, learned.Heading):
            st.subheader(block.text)
        elif isinstance(block, learned.Line):
            st.markdown(block.markdown)
        elif isinstance(block, learned.Caption):
            st.caption(block.text)
        elif isinstance(block, learned.Chart):
            chart(block.draw(), key=block.key, alt=block.alt)
        elif isinstance(block, learned.Details):
            with st.expander(block.summary):
                st.markdown(block.markdown)
        elif isinstance(block, learned.Note):
            st.info(block.text)


# --- the page -------------------------------------------------------------------------------------------------------

st.title("Learned memory")
# The page's point first, computed from the capacity record (lineage.train.findings.capacity_headline), or without
# one from the first recorded sweep (findings.headline); the sections below come from the same composition
recorded = read(RECORD)  # the re-run picker offers its points
# the capacity record: a CPU's part (data/learned_memory_capacity.jsonl) and a lent GPU's (…_capacity_gpu.jsonl)
capacity = [r for path in findings.capacity_records() for r in read(path)]
page = learned.recorded_page(recorded, capacity, learned.grids(cached_size))
if point := page.headline:
    st.markdown(f"**{point.claim}**")
    st.metric(point.label, point.shown)
prose(learned.INTRO)

caps = device_caps().training
cap_text = (
    f"Training is capped on {device_info().type} at {caps.steps:,} steps and {caps.seconds:.0f} s per mechanism, "
    f"{caps.mechanisms} mechanisms per press (so every run stays fast for everyone)."
)


def rerun_picker(results: list[dict]) -> None:
    """Pick any recorded point and train it again here, with its recorded config and seed, within the cap."""
    title = plots.mixer_title
    st.markdown("**Re-run a recorded point here**, with its recorded config and seed (within the training cap below):")
    points_by_label = {findings.point_label(r["result"], title): TrainResult.from_dict(r["result"]) for r in results}
    left, right = controls_row([4, 1])
    picked = points_by_label[left.selectbox("Recorded point", list(points_by_label), key="learned_memory_point")]
    if not right.button("Re-run it", key="learned_memory_rerun"):
        return
    steps = min(picked.steps, caps.steps)
    cfg = replace(TrainConfig(**picked.train), max_steps=steps, max_seconds=caps.seconds)
    bar = st.progress(0.0, text="re-running …")
    again = run_or_stop(
        loop.train,
        TaskConfig(**picked.task),
        LMConfig(**picked.model),
        cfg,
        seed=picked.seed,
        progress=lambda s, loss, acc: bar.progress(s / steps, text=f"step {s}, loss {loss:.3f}, accuracy {acc:.1%}"),
    )
    bar.empty()
    n = min(len(again.loss), len(picked.loss))
    same = bool(np.allclose(again.loss[:n], picked.loss[:n], rtol=1e-4, atol=1e-5))
    st.markdown(findings.rerun_sentence(again, picked, steps, device_label(), n, same))


show(page.capacity)
show(page.first)
if recorded:
    rerun_picker(recorded)

TRAINED_KEY = "_learned_memory_trained"  # session state: the models this session trained

st.subheader("Train here")
# These controls choose what this session trains and opens, so a link cannot set them (an integer input bound to the
# URL would also meet Streamlit 1.67's overflow on ?…=inf): a link value for one is reported as not used.
links.not_linked(
    "learned_memory_task",
    "learned_memory_mixers",
    "learned_memory_steps",
    "learned_memory_seconds",
    "learned_memory_pairs_n",
    "learned_memory_T",
    "learned_memory_front",
    "learned_memory_point",
    "learned_memory_open",
    "learned_memory_layer",
    "learned_memory_head",
)
a, b, c, d = controls_row([2, 3, 1, 1])
task_key = a.selectbox("Task", TASKS, format_func=TASK_TITLES.get, key="learned_memory_task")
chosen = b.multiselect(
    "Mechanisms",
    MIXERS + CONTROLS,
    default=list(LIVE_MIXERS),
    format_func=plots.mixer_title,
    key="learned_memory_mixers",
)
steps = int(c.number_input("Steps", min_value=1, value=LIVE_TRAINING.max_steps, step=50, key="learned_memory_steps"))
seconds = float(
    d.number_input(
        "Seconds each", min_value=1.0, value=LIVE_TRAINING.max_seconds, step=5.0, key="learned_memory_seconds"
    )
)
e, f, h, g = controls_row([2, 2, 3, 1], caps=[cap_text])
size = e.slider(
    "Key–value pairs (MQAR)", 1, 8, LIVE_TASK.n_pairs, key="learned_memory_pairs_n", disabled=task_key != "mqar"
)
length = f.select_slider("Sequence length", [16, 32, 64], LIVE_TASK.seq_len, key="learned_memory_T")
front_end = h.selectbox(
    "Front end, every mixer alike",
    list(FRONT_END_CHOICES),
    format_func=FRONT_END_CHOICES.get,
    key="learned_memory_front",
)
pressed = g.button("Train", type="primary", key="learned_memory_train")
st.caption(TASK_SOURCES[task_key])

problems = findings.training_problems(steps, seconds, chosen, caps)

model_cfg = LIVE_MODEL
trained: dict = st.session_state.setdefault(TRAINED_KEY, {})
if pressed and problems:
    st.error("Not trained: " + "; ".join(problems) + ".")
elif pressed:
    try:
        task = TaskConfig(task_key, vocab_size=model_cfg.vocab_size, seq_len=length, n_pairs=size)
    except ValueError as exc:
        st.error(f"Not trained: {exc}")
        stop_page()
    cfg = replace(LIVE_TRAINING, max_steps=steps, max_seconds=seconds)
    results: dict[str, TrainResult] = {}
    models = {}
    so_far: dict[str, tuple[list, list]] = {}  # the curves while they grow
    bar = st.progress(0.0, text=f"training on {device_label()} …")
    if task.task == "mqar":
        st.caption(PLATEAU_TEXT)
    live = st.empty()
    # one visitor trains at a time, and holds no page slot meanwhile: the other visitors' pages keep running
    try:
        with limits.PAGES.released(), limits.heavy_slot(limits.TRAINING):
            for i, mixer in enumerate(chosen):
                so_far[mixer] = ([], [])

                def progress(step: int, loss: float, acc: float, i=i, mixer=mixer) -> None:
                    so_far[mixer][0].append(step)
                    so_far[mixer][1].append(acc)
                    bar.progress(
                        (i + step / steps) / len(chosen),
                        text=f"{plots.mixer_title(mixer)}: step {step} of {steps}, loss {loss:.3f}, accuracy {acc:.1%}",
                    )
                    with live.container():
                        chart(
                            plots.training_curves(so_far, title="Training now", chance=task.chance),
                            key=f"learned_memory_live_{mixer}_{step}",
                            alt="Held-out accuracy against training step while training runs.",
                        )

                result, model = run_or_stop(
                    loop.train,
                    task,
                    replace(model_cfg, mixer=mixer, front_end=front_end),
                    cfg,
                    seed=seed(),
                    progress=progress,
                    return_model=True,
                )
                results[mixer], models[mixer] = result, model
    except limits.ServerBusy:
        st.error(BUSY_TEXT)
        stop_page()
    bar.empty()
    live.empty()
    trained.clear()
    trained.update(task=task, results=results, models=models, front_end=front_end)

if trained:
    task, results = trained["task"], trained["results"]
    chart(
        plots.training_curves(
            curves_of(results), title=f"{TASK_TITLES[task.task]}: held-out accuracy while training", chance=task.chance
        ),
        key="learned_memory_curves",
        alt="Held-out accuracy against training step, one line per mechanism trained here.",
    )
    st.markdown(
        findings.live_sentence(results, task.chance, plots.mixer_title)
        + f" Trained live, {device_label()}, with {FRONT_END_TITLES[trained['front_end']]}."
    )
    if task.task == "mqar" and (flat := findings.on_plateau(results.values(), task.n_pairs)):
        names = ", ".join(plots.mixer_title(r.mixer) for r in flat)
        st.markdown(f"{names}: near 1/{task.n_pairs} of the answers right when training stopped. " + PLATEAU_TEXT)

    st.subheader("What the model learned")
    with_memory = [m for m, model in trained["models"].items() if model.mixers()]
    if not with_memory:
        st.info("Train a linear-memory mechanism (KDA shows the most) to open up its gates, β and state.")
    else:
        order = sorted(with_memory, key=lambda m: m != "kda")
        p, q, r = controls_row(3)
        mixer = p.selectbox("Model", order, format_func=plots.mixer_title, key="learned_memory_open")
        model = trained["models"][mixer]
        example = make_batch(task, 1, seed())
        logits, layers = learned_layers(model, example.tokens)
        names = [f"block {layer.block + 1} ({plots.mixer_title(layer.mechanism)})" for layer in layers]
        which = q.selectbox("Layer", range(len(layers)), format_func=names.__getitem__, key="learned_memory_layer")
        layer = layers[which]
        H = layer.states.shape[1]
        head = r.selectbox("Head", range(H), key="learned_memory_head")
        scored = example.targets[0] >= 0
        right = int((logits[0].argmax(-1) == example.targets[0])[scored].sum())
        st.markdown(
            f"One new example (seed {seed()}): the model answers **{right} of {int(scored.sum())}** scored positions "
            "right. Below, what this layer computed from the data at every token."
        )
        tokens = [str(t) for t in example.tokens[0].tolist()]
        if layer.alpha is not None and layer.alpha.ndim == 3:
            alpha = layer.alpha[head]  # [T, K]
            st.markdown(findings.channel_gates_sentence(alpha))
            chart(
                plots.gates_by_channel(alpha, title=f"Learned α per key channel, head {head}, every token"),
                key="learned_memory_gates",
                alt="Heatmap of the learned decay α for every key channel across the tokens of one example.",
            )
        series = {}
        if layer.alpha is not None and layer.alpha.ndim == 2:
            series[f"α (head {head})"] = layer.alpha[head]
        if layer.beta is not None:
            series[f"β (head {head})"] = layer.beta[head]
            st.markdown(
                f"β, the write strength, ranged from {layer.beta[head].min():.2f} to {layer.beta[head].max():.2f} "
                f"over this example (mean {layer.beta[head].mean():.2f})."
            )
        if series:
            chart(
                plots.over_time(
                    series, title="Learned per-token gate and write strength", y_title="value", y_range=(0, 1)
                ),
                key="learned_memory_beta",
                alt="Lines of the learned β (and scalar gate) at every token of one example.",
            )
        gate = layer.alpha[head] if layer.alpha is not None and layer.alpha.ndim == 3 else None
        chart(
            plots.state_animation(
                {f"{plots.mixer_title(layer.mechanism)} S_t, head {head}": layer.states[:, head]},
                title="The state under the learned gates and β, token by token",
                gate=gate,
            ),
            key="learned_memory_state",
            alt="Animated heatmap of one head's state after every token, with the learned gates beside it.",
            export_name="learned_memory_state",
        )
        st.caption("Tokens of this example: " + " ".join(tokens))

what_to_notice(
    [
        "The capacity chart keeps the model size fixed and adds pairs: softmax's cache grows with the sequence and "
        "holds them all, while a fixed state must fit every pair into the same numbers — where each line leaves the "
        "top is where its state runs out of room, and the sentences under it say, from the record, where that is.",
        "The recorded chart compares mechanisms with the same front end, at their best learning rate, over several "
        "seeds; where a point stopped at its budget the sentences say so, and a plateau near 1/N is the budget "
        "running out, not the memory.",
        "Compare each solid line with its dotted twin, the same mechanism without the convolution: the sentences "
        "under the chart say, from the record, how much the front end changed.",
        "A model whose blocks mix nothing across tokens (the control) stays at chance whatever it is trained for: "
        "the accuracy of the others is their memory at work.",
        "KDA's learned gates differ between channels and between tokens: that is the data-dependent forgetting the "
        "KDA page can only imitate with hand-set values.",
    ]
)
