"""Learned memory: train tiny models of every stage on recall tasks, live, and open up what training made of them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import streamlit as st

from lineage import plots, train
from lineage.device import device_info
from lineage.lm import CONTROLS, MIXERS, LMConfig, learned_layers
from lineage.tasks import TASK_TITLES, TASKS, TaskConfig, make_batch
from lineage.train import TrainConfig, TrainResult
from ui import limits
from ui.classroom import chart, controls_row, prose
from ui.common import BUSY_TEXT, device_label, run_or_stop, seed, stop_page, what_to_notice
from ui.common import caps as common_caps

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "learned_memory_reference.json"
# The same model and task at the points where the reference run fell short, given a longer cap (see its command)
LONGER = Path(__file__).resolve().parents[1] / "data" / "learned_memory_longer.json"


# What the papers found on MQAR, checked against the recorded numbers: (kind, mechanism, other, source).
# "solves": reaches the target at every recorded size; "beats": higher mean accuracy; "at least": mean accuracy at
# least as high, and the target reached in no more steps on average.
PAPER_CLAIMS = (
    (
        "solves",
        "softmax",
        None,
        "Zoology (Arora et al. 2023, arXiv 2312.04927): attention solves MQAR at every size it tests; models with a "
        "fixed-size state need a larger state as the number of pairs grows",
    ),
    (
        "beats",
        "deltanet",
        "linear_attention",
        "DeltaNet (Yang et al. 2024, arXiv 2406.06484): on MQAR the delta rule beats additive linear attention",
    ),
    (
        "at least",
        "kda",
        "gated_deltanet",
        "Kimi Linear report (arXiv 2510.26692), §5.1 and Figure 4(b), on its MQAR (2 layers, 2 heads of 128, up to "
        "20,000 steps): KDA has the highest accuracy at every training length from 256 to 2,048 tokens, and at 1,024 "
        "tokens converges markedly faster than Gated DeltaNet. Its MQAR example puts the queries after a separator; "
        "the recorded run uses Zoology's layout, at far shorter lengths",
    ),
)
TIE = 0.02  # accuracies this close count as equal
# How each task here stands to the paper it comes from, shown under the task picker (the full comparison is in
# lineage/tasks.py's docstring). The Kimi Linear report defines Palindrome, MQAR and Stack in §5.1, pp. 7–8.
KIMI_SIZES = " The report trains on 256–2,048 tokens for up to 20,000 steps; the runs here are far smaller."
TASK_SOURCES = {
    "mqar": "MQAR as Zoology generates it (arXiv 2312.04927, §3): the pairs, then every key asked once, at power-law "
    "distances. The Kimi Linear report's MQAR (arXiv 2510.26692, §5.1, Figure 4b) is laid out otherwise in its "
    "example: the pairs, a separator, then the queried keys back to back.",
    "palindrome": "Palindrome as the Kimi Linear report defines it (arXiv 2510.26692, §5.1, Figure 4a): random tokens, "
    "a separator, then the same tokens reversed. One difference: here the separator's position is scored too (its "
    "answer is the token just before it), which the report's example leaves unscored — one easy position in every "
    "T/2." + KIMI_SIZES,
    "stack": "Stack as the Kimi Linear report defines it (arXiv 2510.26692, §5.1, Figure 4c), with two differences: "
    f"{TaskConfig('stack').n_stacks} stacks here against its 64, and two tokens per operation (the operation and the "
    "stack in one token, then the value) against its three (`<PUSH> 1 G`, `<POP> 0 E`). As there, every pop is "
    "scored: the answer is the value on top of that stack." + KIMI_SIZES,
}
# The model and optimiser of a live run: those of the recorded sweep (see its command), up to 64 tokens.
LIVE_MODEL = LMConfig(vocab_size=64, max_len=64, d_model=64, n_layers=2, n_heads=4)
LIVE_TRAINING = TrainConfig(lr=1e-3, batch_size=64)


@st.cache_data(max_entries=2, ttl=3600, show_spinner=False)
def longer_reference(mtime: float) -> dict:
    """The second recorded run (``LONGER``), read once per change of the file."""
    return json.loads(LONGER.read_text())


def same_point(a: TrainResult, b: TrainResult) -> bool:
    """The same model, task and optimiser, up to the caps on steps and seconds."""
    caps = ("max_steps", "max_seconds")
    return (
        a.model == b.model
        and a.task == b.task
        and a.seed == b.seed
        and {k: v for k, v in a.train.items() if k not in caps} == {k: v for k, v in b.train.items() if k not in caps}
    )


def longer_sentence(runs: list[TrainResult], longer: dict) -> str:
    """What the points the reference run did not solve did when given longer, from the second recorded run."""
    again = [TrainResult.from_dict(r) for r in longer["runs"]]
    pairs = [(r, a) for r in runs if not r.solved for a in again if same_point(a, r)]
    if not pairs:
        return ""
    cap = max(a.train["max_steps"] for _, a in pairs)
    said = []
    for r, a in sorted(pairs, key=lambda p: (p[0].mixer, p[0].task["n_pairs"])):
        what = (
            f"{plots.mixer_title(r.mixer)} with {r.task['n_pairs']} pairs in {r.task['seq_len']} tokens "
            f"({r.accuracy:.0%} after {r.steps:,})"
        )
        if a.solved:
            said.append(f"{what} reached {a.accuracy:.0%} after {a.steps:,} steps")
        else:
            said.append(f"{what} was at {a.accuracy:.0%} after {a.steps:,} steps ({a.stopped.replace('_', ' ')})")

    def points(solved: bool) -> str:
        by: dict[str, list[str]] = {}
        for r, a in pairs:
            if a.solved == solved:
                by.setdefault(plots.mixer_title(r.mixer), []).append(
                    f"{r.task['n_pairs']} pairs in {r.task['seq_len']} tokens"
                )
        return " and ".join(f"{name} at {', '.join(at)}" for name, at in by.items())

    verdict = []
    if solved := points(True):
        verdict.append(f"{solved} needed more steps, not another memory")
    if unsolved := points(False):
        verdict.append(
            f"{unsolved} did not reach the target within {cap:,} steps either: a longer plateau or a limit of the "
            "model, which this record cannot tell apart"
        )
    return (
        f"**Given up to {cap:,} steps** (a second recorded run on {longer['device']}, {longer['date'][:10]}, "
        f"`{longer['command']}`): " + "; ".join(said) + ". So " + "; ".join(verdict) + "."
    )


@st.cache_data(max_entries=2, ttl=3600, show_spinner=False)
def reference(mtime: float) -> dict:
    """The recorded sweep (re-read when the file changes)."""
    return json.loads(REFERENCE.read_text())


def sweep_axes(runs: list[TrainResult]) -> tuple[dict, dict, int, int]:
    """The recorded runs as the two Zoology axes: accuracy vs pairs (at the most common length) and vs length (at
    the most common number of pairs). Returns (by_pairs, by_length, that length, those pairs)."""
    lengths = [r.task["seq_len"] for r in runs]
    pairs = [r.task["n_pairs"] for r in runs]
    T = max(set(lengths), key=lengths.count)
    N = max(set(pairs), key=pairs.count)
    by_pairs: dict[str, tuple[list, list]] = {}
    by_length: dict[str, tuple[list, list]] = {}
    for r in sorted(runs, key=lambda r: (r.task["n_pairs"], r.task["seq_len"])):
        if r.task["seq_len"] == T:
            by_pairs.setdefault(r.mixer, ([], []))
            by_pairs[r.mixer][0].append(r.task["n_pairs"])
            by_pairs[r.mixer][1].append(r.accuracy)
    for r in sorted(runs, key=lambda r: r.task["seq_len"]):
        if r.task["n_pairs"] == N:
            by_length.setdefault(r.mixer, ([], []))
            by_length[r.mixer][0].append(r.task["seq_len"])
            by_length[r.mixer][1].append(r.accuracy)
    return by_pairs, by_length, T, N


def solved_sentence(runs: list[TrainResult], T: int, target: float, caps: str) -> str:
    """Which mechanism solved which numbers of pairs, and where each one stopped short and why, from the records."""
    parts = []
    by: dict[str, list[TrainResult]] = {}
    for r in sorted(runs, key=lambda r: r.task["n_pairs"]):
        if r.task["seq_len"] == T:
            by.setdefault(r.mixer, []).append(r)
    for mixer, rs in by.items():
        name = plots.mixer_title(mixer)
        solved = [r.task["n_pairs"] for r in rs if r.accuracy >= target]
        short = [r for r in rs if r.accuracy < target]
        if not short:
            parts.append(f"**{name}** solved every size (up to {max(solved)} pairs)")
            continue
        why = [
            f"{r.accuracy:.1%} at {r.task['n_pairs']} pairs"
            + (f" (stopped by the time cap after {r.steps} steps)" if r.stopped == "max_seconds" else "")
            for r in short
        ]
        got = f"solved {', '.join(map(str, solved))} pairs; " if solved else "solved none: "
        parts.append(f"**{name}** {got}{', '.join(why)}")
    return f"At {T} tokens, reaching {target:.0%} held-out accuracy within {caps}: " + "; ".join(parts) + "."


def paper_checks(runs: list[TrainResult]) -> list[str]:
    """Each claim of the papers, and whether the recorded numbers agree with it."""
    by = {}
    for r in runs:
        by.setdefault(r.mixer, []).append(r)
    acc = {m: float(np.mean([r.accuracy for r in rs])) for m, rs in by.items()}
    lines = []
    for kind, m, other, source in PAPER_CLAIMS:
        if m not in by or (other is not None and other not in by):
            continue
        name = plots.mixer_title(m)
        if kind == "solves":
            agree = all(r.solved for r in by[m])
            here = (
                f"{name} reached the target at all {len(by[m])} recorded points"
                if agree
                else f"{name} reached it at {sum(r.solved for r in by[m])} of {len(by[m])} points, at best "
                f"{max(r.accuracy for r in by[m]):.0%}"
            )
        else:
            other_name = plots.mixer_title(other)
            here = f"mean accuracy {name} {acc[m]:.0%}, {other_name} {acc[other]:.0%}"
            agree = acc[m] > acc[other] + TIE if kind == "beats" else acc[m] >= acc[other] - TIE
            steps = {k: [r.steps for r in by[k] if r.solved] for k in (m, other)}
            if kind == "at least" and all(steps.values()):
                mean_steps = {k: float(np.mean(v)) for k, v in steps.items()}
                here += f"; target reached in {mean_steps[m]:.0f} against {mean_steps[other]:.0f} steps on average"
                agree = agree and mean_steps[m] <= mean_steps[other]
        lines.append(f"{source}. Here: {here} — this run {'agrees' if agree else '**disagrees**'}.")
    return lines


def guessing_sentence(runs: list[TrainResult]) -> str:
    """Which mechanisms failed by guessing among the context's values (accuracy near 1/pairs), if any."""
    near = [r for r in runs if not r.solved and abs(r.accuracy - 1 / r.task["n_pairs"]) < 0.1]
    if not near:
        return ""
    names = " and ".join(dict.fromkeys(plots.mixer_title(r.mixer) for r in near))
    examples = ", ".join(
        f"{plots.mixer_title(r.mixer)} {r.accuracy:.0%} with {r.task['n_pairs']} pairs"
        for r in sorted(near, key=lambda r: r.task["n_pairs"])[:4]
    )
    return (
        f"Where {names} failed, their accuracy sat near 1/N for N pairs ({examples}): they had learned to answer "
        "with one of the values in the context, but not the one bound to the queried key. That is the plateau "
        "before a model learns to look up the token after a match; in this run they did not leave it within "
        f"{near[0].train['max_steps']} steps. The papers train for many thousands of steps: the Kimi Linear report "
        "gives each synthetic task up to 20,000 (arXiv 2510.26692, §5.1; its Figure 4 plots accuracy to 20K steps)."
    )


def curves_of(results: dict[str, TrainResult]) -> dict:
    return {m: (r.eval_step, r.eval_accuracy) for m, r in results.items()}


# --- the page -------------------------------------------------------------------------------------------------------

st.title("Learned memory")
prose(
    """
Every other page sets the gates and β by hand. Here small language models learn them. Each model is the same
GPT-2-style stack — token and position embeddings, two pre-norm blocks, an MLP, an output head — with one mechanism
of the lineage as its token mixer, built from the layers the stage pages run, with gates and β computed from the
data as in the papers. They are trained with AdamW on **multi-query associative recall** (MQAR, from the Zoology
paper): key–value pairs, then the keys again, and the model must answer each with its value. A fixed-size state has
to hold every pair at once; a KV cache just keeps them all.
"""
)

caps = common_caps().training
cap_text = (
    f"Training is capped on {device_info().type} at {caps.steps:,} steps and {caps.seconds:.0f} s per mechanism, "
    f"{caps.mechanisms} mechanisms per press (so every run stays fast for everyone)."
)


def recorded_section(data: dict) -> None:
    """The recorded sweep: the Zoology-style charts, what they say, the papers' expectations, and a live re-run."""
    runs = [TrainResult.from_dict(r) for r in data["runs"]]
    by_pairs, by_length, ref_T, ref_N = sweep_axes(runs)
    first = runs[0]
    chance = TaskConfig(**first.task).chance
    live_points: dict[str, tuple[list, list]] = st.session_state.setdefault("learned_memory_live_points", {})
    st.subheader("The recorded run: accuracy against the number of pairs, one state size")
    limits = f"{first.train['max_steps']} steps or {first.train['max_seconds']:.0f} s"
    st.markdown(solved_sentence(runs, ref_T, first.train["target_accuracy"], limits))
    chart(
        plots.accuracy_sweep(
            by_pairs,
            x_title="key–value pairs",
            title=f"MQAR at {ref_T} tokens; every linear layer holds {max(r.state_numbers for r in runs):,} numbers "
            "of state "
            f"({first.model['n_heads']} heads × {first.model['d_model'] // first.model['n_heads']}²)",
            chance=chance,
            live=live_points,
        ),
        key="learned_memory_pairs",
        alt="Held-out accuracy against the number of key-value pairs for each mechanism, from the recorded run.",
    )
    st.caption(
        f"Recorded {data['date']} on {data['device']} ({data['machine']}, {data['cpu_count']} cores, "
        f"{data['threads']} torch thread, load average {data['load_average_before'][0]:.1f} at the start: other "
        f"work shared the machine), torch {data['torch_version']}, {data['wall_seconds'] / 60:.0f} min in all, with "
        f"`{data['command']}`."
    )
    if len({x for xs, _ in by_length.values() for x in xs}) > 1:
        chart(
            plots.accuracy_sweep(
                by_length,
                x_title="sequence length (tokens)",
                title=f"MQAR with {ref_N} pairs: accuracy against sequence length (recorded)",
                chance=chance,
            ),
            key="learned_memory_lengths",
            alt="Held-out accuracy against sequence length for each mechanism, from the recorded run.",
        )
    with st.expander("Each recorded point: steps, wall time, why it stopped"):
        st.markdown(
            "\n".join(
                f"- {plots.mixer_title(r.mixer)}, {r.task['n_pairs']} pairs, {r.task['seq_len']} tokens: "
                f"{r.accuracy:.1%} after {r.steps} steps ({r.stopped}), {r.wall_seconds:.1f} s"
                for r in runs
            )
        )
    for line in paper_checks(runs):
        st.markdown(f"- {line}")
    if said := guessing_sentence(runs):
        st.markdown(said)
    if LONGER.exists() and (said := longer_sentence(runs, longer_reference(LONGER.stat().st_mtime))):
        st.markdown(said)

    st.markdown("**Re-run a recorded point here**, with its recorded config and seed (within the training cap below):")
    labels = {
        f"{plots.mixer_title(r.mixer)}, {r.task['n_pairs']} pairs, {r.task['seq_len']} tokens ({r.accuracy:.0%})": r
        for r in runs
    }
    left, right = controls_row([4, 1])
    picked = labels[left.selectbox("Recorded point", list(labels), key="learned_memory_point")]
    if not right.button("Re-run it", key="learned_memory_rerun"):
        return
    steps = min(picked.steps, caps.steps)
    cfg = replace(TrainConfig(**picked.train), max_steps=steps, max_seconds=caps.seconds)
    bar = st.progress(0.0, text="re-running …")
    again = run_or_stop(
        train.train,
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
    if again.steps == picked.steps and picked.task["seq_len"] == ref_T:  # a whole point of the chart, re-run
        x, acc = live_points.setdefault(picked.mixer, ([], []))
        x.append(picked.task["n_pairs"])
        acc.append(again.accuracy)


if REFERENCE.exists():
    recorded_section(reference(REFERENCE.stat().st_mtime))
else:
    st.info(
        "No recorded run is stored with this copy of the app (data/learned_memory_reference.json). "
        "`python -m lineage train --task mqar --mixers all --pairs 2,4,8 --out data/learned_memory_reference.json` "
        "makes one."
    )

st.subheader("Train here")
a, b, c, d = controls_row([2, 3, 1, 1])
task_key = a.selectbox("Task", TASKS, format_func=TASK_TITLES.get, key="learned_memory_task")
chosen = b.multiselect(
    "Mechanisms",
    MIXERS + CONTROLS,
    default=list(MIXERS[:3]),  # the lineage's first three: softmax, then the additive and the delta-rule state
    format_func=plots.mixer_title,
    key="learned_memory_mixers",
)
steps = int(c.number_input("Steps", min_value=1, value=300, step=50, key="learned_memory_steps"))
seconds = float(d.number_input("Seconds each", min_value=1.0, value=30.0, step=5.0, key="learned_memory_seconds"))
e, f, g = controls_row(3, caps=[cap_text])
size = e.slider("Key–value pairs (MQAR)", 1, 8, 4, key="learned_memory_pairs_n", disabled=task_key != "mqar")
length = f.select_slider("Sequence length", [16, 32, 64], 32, key="learned_memory_T")
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
trained: dict = st.session_state.setdefault("learned_memory_trained", {})
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
                    train.train,
                    task,
                    replace(model_cfg, mixer=mixer),
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
    trained.update(task=task, results=results, models=models)

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
            + (", reached the target)." if r.solved else ").")
            for m, r in results.items()
        )
        + f" Chance is {task.chance:.1%}; "
        + (
            f"{plots.mixer_title(best.mixer)} learned most."
            if best.accuracy >= 2 * task.chance
            else "none is clear of chance yet: more steps, or fewer pairs."
        )
        + f" Trained live, {device_label()}."
    )

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
        "The recorded chart is the Zoology picture at one state size: where a line drops, that memory ran out of room "
        "(or out of training steps) for that many pairs.",
        "A model whose blocks mix nothing across tokens (the control) stays at chance whatever it is trained for: "
        "the accuracy of the others is their memory at work.",
        "KDA's learned gates differ between channels and between tokens: that is the data-dependent forgetting the "
        "KDA page can only imitate with hand-set values.",
    ]
)
