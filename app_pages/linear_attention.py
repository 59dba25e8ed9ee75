"""Linear attention: fold every key and value into one fixed-size matrix, so memory stops growing with the text."""

from __future__ import annotations

import streamlit as st

from lineage import plots
from lineage.ops.linear_attention import FEATURE_MAPS
from lineage.teach import claims, stage_runs, units
from lineage.teach.story import story_for
from ui.display import chart
from ui.running import run_or_stop
from ui.session import seed
from ui.stage_page import close_stage_page, live_run, open_stage_page, stage_controls
from ui.story import written_link

top = open_stage_page("linear_attention")

inputs, written, (T, K, V) = stage_controls("linear_attention")
# relu first, so the story opens on the blend its claim is about; the paper's elu(x) + 1 is one click away
feature_map = st.radio(
    "Feature map φ",
    sorted((name for name in FEATURE_MAPS if name != "identity"), key=lambda n: n != claims.STORY_FEATURE_MAP),
    format_func={
        "elu1": "elu(x) + 1 (the paper's: every key overlaps every other)",
        "relu": "relu(x) (keeps the story's keys apart)",
    }.get,
    horizontal=True,
    bind="query-params",
    key="linear_attention_feature_map",
    help="Both are non-negative, so the normaliser z·φ(q) stays positive. With elu(x) + 1 every feature is at least "
    "1, so every key overlaps every other and the story's many filler tokens swamp each read.",
)


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def live(T: int, K: int, V: int, seed: int, feature_map: str, inputs: str, written: str = "") -> dict:
    if inputs == "story":
        story = story_for(T, K, V, written)
        run = claims.run_story("linear_attention", story, claims.Knobs(feature_map=feature_map))
        claim = units.stage_claim("linear_attention", run, story, claims.Knobs(feature_map=feature_map))
    else:
        story, claim = None, None
        run = stage_runs.run_stage("linear_attention", T, K, V, seed, feature_map=feature_map)
    return dict(run=run, story=story, claim=claim, recall=stage_runs.recall(run), mixing=stage_runs.mixing_matrix(run))


out = run_or_stop(live, T, K, V, seed(), feature_map, inputs, written_link() if written else "")
run, recall = out["run"], out["recall"]

about = (
    f"The recurrence runs step by step and records the state; the chunked and the T × T forms run on the device and "
    f"are compared with it. The state is {K} × {V + 1} = **{run.states[0].size} numbers** at every step; a KV cache "
    f"of the same {T} tokens would hold {T * (K + V)}, and keep growing."
)
step = live_run(top, "linear_attention", out, T, about=about, normaliser=True)

chart(
    plots.write_and_state(
        run.k,
        run.trace.delta[0, 0],
        run.states,
        value_labels=[f"v{i}" for i in range(V)] + ["z"],
        start=step,
        title="The state, token by token",
    ),
    key="linear_attention_state",
    alt="Animated outer-product write and the accumulated K×V state of linear attention, token by token.",
    export_name="linear_attention_state",
)

st.subheader("One layer, two schedules")
st.markdown(
    f"The parallel form computes this T × T matrix and multiplies it by the values. Its outputs equal the "
    f"recurrence's to a relative {run.err_parallel:.1e}: the recurrence is just this matrix, folded up one row "
    "at a time."
)
chart(
    plots.mixing(out["mixing"], title="Parallel form: scale · φ(q_t)·φ(k_j), masked to j ≤ t"),
    key="linear_attention_parallel",
    alt="The masked T by T matrix of feature dot products that the parallel form multiplies by the values.",
)

st.subheader("Only adds, never updates")
st.markdown(
    "After each step, every key stored so far is used as a query and the normalised read is compared with the "
    "value that was written with it."
)
chart(
    plots.recall_and_norm(recall.by_step, recall.state_norm, title="Only adds: reads blur as the state fills"),
    key="linear_attention_recall",
    alt="Recall error of stored pairs and the norm of the state, both rising with the number of tokens.",
)

close_stage_page(
    "linear_attention",
    [
        "The state never changes shape: the same K × (V + 1) grid at the first token and the last. That is the "
        "memory saving over the KV cache.",
        "Each write lands on top of what is already there; nothing is ever replaced. The normaliser column z only "
        "grows (φ(k) ≥ 0 in every entry), and the state's size keeps climbing.",
        f"With one pair stored, the read is exact. After {T} writes it misses by {recall.by_step[-1]:.0%} on "
        + (
            "average: elu(x) + 1 is at least 1 in every entry, so every key overlaps every other and a read returns a "
            "blend of values."
            if feature_map == "elu1"
            else "average: relu keeps keys apart only where they share no positive entry; a key written twice, or "
            "keys that overlap, read back a blend of values."
        ),
        "Recurrent, chunked and T × T forms agree to float precision. Same numbers, different schedules: the "
        "recurrence for decoding, the parallel forms for training.",
    ],
)
