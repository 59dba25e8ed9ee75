"""Learned memory: train tiny models of every stage on recall tasks, live, and open up what training made of them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import streamlit as st

from lineage import plots
from lineage.device import device_info
from lineage.models.lm import CONTROLS, MIXERS, LMConfig, learned_layers
from lineage.train import findings, loop, sweep
from lineage.train.loop import LIVE_MIXERS, LIVE_MODEL, LIVE_TASK, LIVE_TRAINING, TrainConfig, TrainResult
from lineage.train.tasks import TASK_TITLES, TASKS, TaskConfig, make_batch
from ui import limits, links
from ui.classroom import chart, controls_row, prose
from ui.common import BUSY_TEXT, device_label, run_or_stop, seed, stop_page, what_to_notice
from ui.common import caps as common_caps

DATA = Path(__file__).resolve().parents[1] / "data"
RECORD = findings.RECORD  # python -m lineage sweep data/learned_memory_grid_cpu.json --out …
GRID = DATA / "learned_memory_grid.json"  # the whole grid, for a cluster; the record holds the part that fits a CPU
CPU_GRID = DATA / "learned_memory_grid_cpu.json"

# How each task here stands to the paper it comes from, shown under the task picker (the full comparison is in
# lineage/train/tasks.py's docstring). The Kimi Linear report defines Palindrome, MQAR and Stack in §5.1, pp. 7–8.
KIMI_SIZES = " The report trains on 256–2,048 tokens for up to 20,000 steps; the runs here are far smaller."
TASK_SOURCES = {
    "mqar": "MQAR as Zoology generates it (Arora et al. 2023, arXiv 2312.04927, §3): the pairs, then every key asked "
    "once, at power-law distances; the DeltaNet paper (arXiv 2406.06484) trains on it too. The Kimi Linear report's "
    "MQAR (arXiv 2510.26692, §5.1, Figure 4b) is laid out otherwise in its example: the pairs, a separator, then the "
    "queried keys back to back. (Gated DeltaNet, arXiv 2412.06464, tests recall on RULER's needle tasks, S-NIAH, "
    "not on MQAR.)",
    "palindrome": "Palindrome as the Kimi Linear report defines it (arXiv 2510.26692, §5.1, Figure 4a): random tokens, "
    "a separator, then the same tokens reversed. One difference: here the separator's position is scored too (its "
    "answer is the token just before it), which the report's example leaves unscored — one easy position in every "
    "T/2." + KIMI_SIZES,
    "stack": "Stack as the Kimi Linear report defines it (arXiv 2510.26692, §5.1, Figure 4c), with two differences: "
    f"{TaskConfig('stack').n_stacks} stacks here against its 64, and two tokens per operation (the operation and the "
    "stack in one token, then the value) against its three (`<PUSH> 1 G`, `<POP> 0 E`). As there, every pop is "
    "scored: the answer is the value on top of that stack." + KIMI_SIZES,
}
FRONT_END_TITLES = {
    "conv": "the same short convolution on q, k, v for every mixer",
    "none": "no convolution for any mixer (the ablation)",
}
PLATEAU_TEXT = (
    "Every mixer first learns to guess *one of the values* in the context — accuracy near 1/N for N pairs — and sits "
    "there until it can bind each value to the key just before it. The short convolution hands every position the "
    "previous tokens, so with it that step comes early; without it the model must learn it from the position "
    "embedding, which can take thousands of steps."
)


@st.cache_data(max_entries=2, ttl=3600, show_spinner=False)
def record(mtime: float) -> list[dict]:
    """The recorded sweep's finished points (re-read when the file changes)."""
    return sweep.read_results(RECORD)


@st.cache_data(max_entries=2, ttl=3600, show_spinner=False)
def grid_size(mtime: float, path: str) -> int:
    """How many points a grid file holds."""
    return len(sweep.points_of(sweep.read_grid(path))[0])


def curves_of(results: dict[str, TrainResult]) -> dict:
    return {m: (r.eval_step, r.eval_accuracy) for m, r in results.items()}


def sweep_lines(rows: list[findings.Summary], x_of) -> tuple[dict, dict, dict]:
    """Chart lines from summaries: key -> (x, mean accuracy), key -> (lowest, highest), key -> name."""
    points: dict[str, tuple[list, list]] = {}
    spread: dict[str, tuple[list, list]] = {}
    names: dict[str, str] = {}
    for x in sorted(rows, key=x_of):
        key = x.setting.mixer + ("" if x.setting.front_end == "conv" else f"/{x.setting.front_end}")
        names[key] = findings.label(x.setting, plots.mixer_title)
        points.setdefault(key, ([], []))
        spread.setdefault(key, ([], []))
        points[key][0].append(x_of(x))
        points[key][1].append(x.mean)
        spread[key][0].append(x.low)
        spread[key][1].append(x.high)
    return points, spread, names


# --- the page -------------------------------------------------------------------------------------------------------

st.title("Learned memory")
# The page's point first, computed from the recorded sweep (lineage.train.findings.headline)
recorded = record(RECORD.stat().st_mtime) if RECORD.exists() else []  # the headline and the section read it
if point := findings.headline(findings.summarise(r["result"] for r in recorded), plots.mixer_title):
    st.markdown(f"**{point.claim}**")
    st.metric(point.label, point.shown)
prose(
    """
Every other page sets the gates and β by hand. Here small language models learn them. Each model is the same
GPT-2-style stack — token and position embeddings, two pre-norm blocks, an MLP, an output head — with one mechanism
of the lineage as its token mixer, built from the layers the stage pages run, with gates and β computed from the
data as in the papers. They are trained with AdamW on **multi-query associative recall** (MQAR, from the Zoology
paper, Arora et al. 2023, and used by the DeltaNet paper): key–value pairs, then the keys again, and the model must
answer each with its value. A fixed-size state has to hold every pair at once; a KV cache just keeps them all.
As in Zoology, every mixer gets the **same front end** — a short convolution on q, k and v — so no mechanism wins by
its front end alone; the ablation takes it off.
"""
)

caps = common_caps().training
cap_text = (
    f"Training is capped on {device_info().type} at {caps.steps:,} steps and {caps.seconds:.0f} s per mechanism, "
    f"{caps.mechanisms} mechanisms per press (so every run stays fast for everyone)."
)


def recorded_section(results: list[dict]) -> None:
    """The recorded sweep: accuracy against pairs (best learning rate, seeds' spread, the ablation), against state
    size, the sentences computed from it, and a live re-run of any recorded point."""
    title = plots.mixer_title
    summaries = findings.summarise(r["result"] for r in results)
    rows = findings.by_pairs(summaries) + findings.by_pairs(summaries, "none")
    first = TrainResult.from_dict(results[0]["result"])
    T = first.task["seq_len"]
    st.subheader("The recorded sweep: accuracy against the number of pairs")
    points, spread, names = sweep_lines(rows, lambda x: x.setting.n_pairs)
    chart(
        plots.accuracy_sweep(
            points,
            x_title="key–value pairs",
            title=f"MQAR at {T} tokens, width {findings.main_width(summaries)}",
            chance=TaskConfig(**first.task).chance,
            spread=spread,
            names=names,
            dodge=0.06,
        ),
        key="learned_memory_pairs",
        alt="Held-out accuracy against the number of key-value pairs for each mechanism, from the recorded sweep.",
    )
    st.caption(
        "Each point: the best learning rate, the mean of its seeds (bars: lowest to highest seed); dotted: without the "
        "convolution; the lines are drawn a little apart along x so that equal points stay visible (hover for the "
        "true values); the dotted line along the foot: chance."
    )
    st.caption(findings.memory_caption(summaries, title))
    for line in findings.solved_sentences(summaries, title):
        st.markdown(f"- {line}")
    if said := findings.most_learned(summaries, title):
        st.markdown(said)
    for line in findings.front_end_sentences(summaries, title):
        st.markdown(f"- {line}")
    if said := findings.plateau_sentence(summaries, title):
        st.markdown(said)
    st.markdown("**What the papers found, against this record:**")
    for line in findings.paper_checks(summaries, title):
        st.markdown(f"- {line}")
    if (n := findings.capacity_pairs(summaries)) is not None:
        cap_points, cap_spread, cap_names = sweep_lines(findings.by_width(summaries, n), findings.Summary.state_size)
        chart(
            plots.accuracy_sweep(
                cap_points,
                x_title="numbers one layer carries (log scale)",
                title=f"MQAR with {n} pairs: accuracy against the memory one layer carries (Zoology's plot)",
                spread=cap_spread,
                names=cap_names,
                log_x=True,
            ),
            key="learned_memory_capacity",
            alt="Held-out accuracy against the numbers one layer carries, one line per mechanism, from the sweep.",
        )
        st.markdown(findings.capacity_sentence(summaries, title))
    sessions = sorted({r["run"]["started"]: r["run"] for r in results}.items())
    commands = list(dict.fromkeys(r["run"]["command"] for r in results))
    whole = grid_size(GRID.stat().st_mtime, str(GRID)) if GRID.exists() else 0
    cpu = grid_size(CPU_GRID.stat().st_mtime, str(CPU_GRID)) if CPU_GRID.exists() else 0
    rest = (
        f" The other {cpu - len(results)} were not run: the time this record had ran out (the same command resumes)."
        if cpu > len(results)
        else ""
    )
    run = sessions[0][1]
    st.caption(
        f"{len(results)} recorded points ({len(summaries)} setting{'s' if len(summaries) != 1 else ''}, each the best "
        f"of its learning rates over its seeds) of the {cpu} in data/learned_memory_grid_cpu.json, the part of the "
        f"whole grid (data/learned_memory_grid.json, {whole:,} points, for a cluster) meant for a 2-core CPU.{rest} "
        f"Run in {len(sessions)} session{'s' if len(sessions) != 1 else ''} from {sessions[0][0]} on {run['machine']} "
        f"({run['cpu_count']} cores, {run['runner']}, {first.threads} torch thread per point, load average "
        f"{run['load_average'][0]:.1f} at the start: other work shared the machine), torch {first.torch_version}, "
        "with " + " and ".join(f"`{c}`" for c in commands) + "."
    )
    with st.expander("Each recorded setting: learning rates, seeds, steps, why each stopped"):
        st.markdown(
            "\n".join(
                f"- {findings.label(x.setting, title)}, {x.setting.n_pairs} pairs, {x.setting.seq_len} tokens, width "
                f"{x.setting.width}: {x.evidence()}; seeds {', '.join(map(str, x.seeds))} stopped "
                f"{', '.join(x.stopped)}"
                for x in summaries
            )
        )

    st.markdown("**Re-run a recorded point here**, with its recorded config and seed (within the training cap below):")
    points_by_label = {}
    for r in results:
        t = TrainResult.from_dict(r["result"])
        front = findings.label(findings.Setting(t.mixer, t.model["front_end"], "", 0, 0, 0), title)
        points_by_label[
            f"{front}, {t.task['n_pairs']} pairs, width {t.model['d_model']}, lr {t.train['lr']:g}, seed {t.seed} "
            f"({t.accuracy:.0%})"
        ] = t
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
    cut = "" if steps == picked.steps else f" (the first {steps} of its {picked.steps} steps: the cap here)"
    st.markdown(
        f"Re-run{cut}: held-out accuracy **{again.accuracy:.1%}** after {again.steps} steps in "
        f"{again.wall_seconds:.1f} s on {device_label()}; recorded {picked.accuracy:.1%} after {picked.steps} "
        "steps. "
        + (
            f"The training losses of all {n} steps match the recorded ones."
            if same
            else f"The training losses differ from the recorded ones within the first {n} steps: another CPU or "
            "torch build rounds some matrix products differently, and training amplifies that."
        )
    )


if recorded:
    recorded_section(recorded)
else:
    st.info(
        "No recorded sweep is stored with this copy of the app (data/learned_memory_sweep.jsonl). "
        "`python -m lineage sweep data/learned_memory_grid_cpu.json --out data/learned_memory_sweep.jsonl` "
        "makes one."
    )

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
    "Front end", list(FRONT_END_TITLES), format_func=FRONT_END_TITLES.get, key="learned_memory_front"
)
pressed = g.button("Train", type="primary", key="learned_memory_train")
st.caption(TASK_SOURCES[task_key])

problems = []
if steps > caps.steps:
    problems.append(f"{steps:,} steps asked for; the cap here is {caps.steps:,}")
if seconds > caps.seconds:
    problems.append(f"{seconds:.0f} s per mechanism asked for; the cap here is {caps.seconds:.0f} s")
if len(chosen) > caps.mechanisms:
    problems.append(f"{len(chosen)} mechanisms chosen; one press trains at most {caps.mechanisms}")
if not chosen:
    problems.append("no mechanism chosen")

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
    best = max(results.values(), key=lambda r: r.accuracy)
    st.markdown(
        " ".join(
            f"{plots.mixer_title(m)}: {r.accuracy:.1%} after {r.steps} steps ({r.wall_seconds:.1f} s"
            + (f", reached the {r.train['target_accuracy']:.0%} target)." if r.solved else ").")
            for m, r in results.items()
        )
        + f" Chance is {task.chance:.1%}; "
        + (
            f"{plots.mixer_title(best.mixer)} learned most."
            if best.accuracy >= 2 * task.chance
            else "none is clear of chance yet: more steps, or fewer pairs."
        )
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
        names = [f"block {layer.block + 1} ({plots.mixer_title(layer.kind)})" for layer in layers]
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
            slow, fast = int(alpha.mean(0).argmax()), int(alpha.mean(0).argmin())
            st.markdown(
                f"Its gates are one per key channel: channel {slow} keeps {alpha[:, slow].mean():.2f} of its row per "
                f"token on average, channel {fast} only {alpha[:, fast].mean():.2f} — learned, not set."
            )
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
                {f"{plots.mixer_title(layer.kind)} S_t, head {head}": layer.states[:, head]},
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
