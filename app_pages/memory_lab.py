"""Memory lab: every mechanism on the same stream — store, update, forget, retrieve — measured side by side."""

from __future__ import annotations

import streamlit as st

from lineage import lab, plots
from lineage.units import format_bytes
from ui.caps import capacity_cost, caps
from ui.controls import cap_notes, capped_slider, run_cost_note
from ui.display import chart, prose, show_code
from ui.display import table as show_table
from ui.running import run_or_error
from ui.session import seed

CACHE = dict(max_entries=64, ttl=3600, show_spinner=False)

st.title("Memory lab")
_LAB = lab.participants()
# who runs, from the lab's own list: softmax with its cache, every linear mechanism of the table, the small hybrid
WHO = ", ".join(p.label for key, p in _LAB.items() if key not in (lab.ELU1, lab.HYBRID)) + " and a small hybrid"
claim_slot = st.container()  # the lab's point and its numbers, filled once the experiments below have run
prose(
    f"""
The stage pages show one mechanism at a time. Here they all get **the same stream** of key–value pairs — {WHO} —
and then the same questions, asked with a cue: *what is stored under this key?* Five experiments measure the four
verbs of the lineage — **store** (capacity), **update** (overwrite), **forget** (topic switch, per-channel
retention) and **retrieve** (the needle) — so each step's gain is a number you can change, not a claim. Nothing here
is trained: keys and values are drawn at random, gates and write strengths follow the explicit rules stated with
each experiment, and every sentence under "what this shows" is computed from the numbers above it.
"""
)

with st.expander("How the lab works — and what “the hybrid” is"):
    st.markdown(
        f"""
- **Keys and values.** Keys are unit vectors in d_k dimensions. *Orthogonal* keys come in blocks of d_k
  orthonormal vectors (a fresh random basis per block — as orthogonal as more than d_k keys can be); *random* keys
  are independent. Values are random unit vectors, so an error ‖read − value‖ of 0 is perfect and about 1 means
  nothing useful came back. A cue is the key itself, or with noise the normalised k + noise·ε.
- **Fixed-state memories** are the real ops of this package with scale 1, so the state is exactly Σ k vᵀ (or its
  delta-rule version). **Linear attention** runs with the identity feature map and no normaliser — the pure
  additive outer-product memory, the same write as Mamba-2 with α = 1, so the difference between them is the gate
  alone. The published ELU+1 normalised form can be added below: its features are all positive, so every key
  overlaps every other and it returns a similarity-weighted *average* of what it stored.
- **Softmax attention** reads the full cache of every pair written, with a sharp scale ({lab.SHARP_SCALE:g}): the
  matching key wins almost all the weight. Its memory grows by 2·d_k numbers with every write.
- **The hybrid** keeps a KDA state *and* a softmax cache over the same stream, and reads by one rule: if the
  softmax cache puts at least {lab.HYBRID_CONFIDENCE:g} of its attention on a single key, use the softmax read;
  otherwise use KDA's. It stands in for Kimi Linear's periodic softmax (MLA) layers at the level of one memory —
  and like them it pays for the cache (in Kimi Linear, in one layer of four).
- **Gated DeltaNet-2** (after the article) splits KDA's β into an erase gate and a write gate. The lab sets one
  write strength β per write, which it takes as both gates on every channel: that is KDA, term by term, so its lines
  lie on KDA's here. Its own page moves the two gates apart.
- **Gates are rules, not learned.** Mamba-2 and Gated DeltaNet multiply the state by a constant α before every
  write. KDA gets a slow set of key channels (α_slow) and a fast set whose α is chosen so that the *average*
  log-decay over channels equals log α — the same average forgetting as the single gate. Delta-rule writes use a
  constant β. At a topic switch, every gated memory may apply one reset step α_reset.
- **Reads after every write.** Each cue is one head of the op, all heads receive the same writes, so one call
  returns the read of every cue after every write — whole curves, computed live in float64.
"""
    )
    show_code(lab.run_mechanisms, lab.Gates.channel_alpha, title="The code that runs every mechanism")

st.subheader("The stream")
a, b, c = st.columns(3)
d_k = a.slider(
    "Key dimension d_k",
    lab.MIN_D_K,
    lab.MAX_D_K,
    16,
    bind="query-params",
    key="lab_d_k",
    help="Every fixed state is d_k × d_k.",
)
keys = b.radio(
    "Keys",
    lab.KEY_KINDS,
    bind="query-params",
    key="lab_keys",
    horizontal=True,
    help="Orthogonal: blocks of d_k orthonormal keys.",
)
noise = c.slider(
    "Cue noise",
    0.0,
    lab.MAX_NOISE,
    0.0,
    0.05,
    bind="query-params",
    key="lab_noise",
    help="A read uses normalize(k + noise·ε).",
)
with_elu1 = st.checkbox("Also show the ELU+1 normalised linear attention", bind="query-params", key="lab_elu1")
mechanisms = lab.DEFAULT_MECHANISMS + (("linear_attention_elu1",) if with_elu1 else ())
cap_notes(
    [
        f"Seed {seed()} (shared by all pages, in the sidebar). Sizes are capped at d_k ≤ {lab.MAX_D_K} and "
        f"{lab.MAX_PAIRS} writes per stream so every run stays fast for everyone."
    ]
)
stream = dict(d_k=d_k, keys=keys, noise=noise, seed=seed(), mechanisms=mechanisms)

overview = st.container()


def gate_sliders(prefix: str, *, alpha: float, beta: bool = True, slow: bool = False, reset: bool = False) -> dict:
    """The gate rules of one experiment as sliders: α (scalar gates, KDA's average), β, KDA's split, the reset."""
    cols = st.columns(2 + slow + reset)
    out = dict(
        alpha=cols[0].slider(
            "α per write (Mamba-2, Gated DeltaNet; KDA's average)",
            0.5,
            1.0,
            alpha,
            0.01,
            bind="query-params",
            key=f"lab_{prefix}_alpha",
        )
    )
    if beta:
        out["beta"] = cols[1].slider(
            "β of delta-rule writes", 0.0, 1.0, 1.0, 0.05, bind="query-params", key=f"lab_{prefix}_beta"
        )
    if slow:
        out["alpha_slow"] = cols[2].slider(
            "KDA slow channels α_slow", 0.5, 1.0, 1.0, 0.005, bind="query-params", key=f"lab_{prefix}_alpha_slow"
        )
    if reset:
        out["alpha_reset"] = cols[-1].slider(
            "α at the switch (reset rule)",
            0.0,
            1.0,
            0.0,
            0.05,
            bind="query-params",
            key=f"lab_{prefix}_reset",
            help="1 = no reset.",
        )
    return out


def kda_split(d_k: int, gates: dict) -> str:
    """KDA's channels under these rules, in words ("" for an impossible rule: the run below reports it)."""
    if gates.get("alpha_slow", 1.0) < gates["alpha"]:
        return ""
    g = lab.Gates(**gates)
    alphas = g.channel_alpha(d_k)
    n_slow = g.n_slow(d_k)
    return f"KDA: {n_slow} slow channels at α = {alphas[0]:.3g}, {d_k - n_slow} fast at α = {alphas[-1]:.3g}."


def what_this_shows(result) -> None:
    numbers = lab.table(result)
    show_table(numbers, key=f"lab_table_{type(result).__name__}", index=True, formats=lab.people_formats(numbers))
    st.info(f"**What this shows.** {lab.summary(result)}")


def settings(d_k, keys, noise, seed) -> lab.LabSettings:
    return lab.LabSettings(d_k=d_k, keys=keys, noise=noise, seed=seed)


@st.cache_data(**CACHE)
def run_overwrite(d_k, keys, noise, seed, mechanisms, n_between, alpha, beta):
    gates = lab.Gates(alpha=alpha, beta=beta)
    return lab.overwrite(settings(d_k, keys, noise, seed), gates, n_between=n_between, mechanisms=mechanisms)


@st.cache_data(**CACHE)
def run_capacity(d_k, keys, noise, seed, mechanisms, n_max, trials, alpha, beta):
    gates = lab.Gates(alpha=alpha, beta=beta)
    return lab.capacity(settings(d_k, keys, noise, seed), gates, n_max=n_max, trials=trials, mechanisms=mechanisms)


@st.cache_data(**CACHE)
def run_topic_switch(d_k, keys, noise, seed, mechanisms, n_a, n_b, alpha, beta, alpha_reset):
    gates = lab.Gates(alpha=alpha, beta=beta, alpha_reset=alpha_reset)
    return lab.topic_switch(settings(d_k, keys, noise, seed), gates, n_a=n_a, n_b=n_b, mechanisms=mechanisms)


@st.cache_data(**CACHE)
def run_retention(d_k, keys, noise, seed, mechanisms, n_long, n_short, alpha, beta, alpha_slow):
    gates = lab.Gates(alpha=alpha, beta=beta, alpha_slow=alpha_slow)
    return lab.retention(settings(d_k, keys, noise, seed), gates, n_long=n_long, n_short=n_short, mechanisms=mechanisms)


@st.cache_data(**CACHE)
def run_needle(d_k, keys, noise, seed, mechanisms, n_fill, alpha, beta, alpha_slow):
    gates = lab.Gates(alpha=alpha, beta=beta, alpha_slow=alpha_slow)
    return lab.needle(settings(d_k, keys, noise, seed), gates, n_fill=n_fill, mechanisms=mechanisms)


# ---- 1. overwrite ------------------------------------------------------------------------------------------------

st.header("1 · Overwrite: update a fact")
prose(
    """
**The question.** A key k\\* is written with a value v1; a few other pairs follow; then k\\* is written again with
a new value v2. Asked for k\\*, does the memory return v2 — or v1, or a mix of both? Linear attention can only
add, so it should return v1 + v2; the delta rule reads what is stored at k\\* and writes only the correction, so
with β = 1 and a unit key it should return v2 exactly. Softmax attention keeps both pairs and, matching by
content alone, splits its attention between them.
"""
)
n_between = st.slider(
    "Other pairs between the two writes", 0, lab.MAX_BETWEEN, 4, bind="query-params", key="lab_overwrite_between"
)
g1 = gate_sliders("overwrite", alpha=lab.OVERWRITE_GATES.alpha)
st.caption(kda_split(d_k, g1))
r1 = run_or_error(run_overwrite, **stream, n_between=n_between, **g1)
if r1 is not None:
    chart(
        plots.overwrite_vectors(r1),
        key="lab_overwrite_vectors",
        alt="Heatmap, one row per mechanism: the vector each one returns for the overwritten key, beside the old "
        "value v1 and the new value v2.",
    )
    chart(
        plots.overwrite_blend(r1),
        key="lab_overwrite_blend",
        alt="Grouped bars per mechanism: how much of the old value, of the new value and of crosstalk each read holds.",
    )
    what_this_shows(r1)

# ---- 2. capacity -------------------------------------------------------------------------------------------------

st.header("2 · Capacity: how much fits")
prose(
    """
**The question.** Store N pairs, then ask for every one of them. How does the recall error grow with N, from one
pair to well past d_k? A d_k × d_k state can hold at most d_k independent directions, so something must give
past N = d_k (the dashed line). The softmax cache simply grows. Additive writes pile every pair onto the same
matrix, so past d_k all of them blur together; the delta rule overwrites, so it keeps the most recent d_k pairs and
loses the older ones. At α = 1 the gated memories are their ungated parents (Mamba-2 = linear attention, Gated
DeltaNet = KDA = DeltaNet): lower α to see forgetting trade old pairs for room.
"""
)
a, b = st.columns(2)
n_max = capped_slider(
    a, "Pairs stored, up to N =", 2, lab.MAX_PAIRS, 48, key="lab_capacity_n", name="N", why="the lab's largest"
)
trials = capped_slider(
    b, "Streams averaged", 1, lab.MAX_TRIALS, 2, key="lab_capacity_trials", name="Streams", why="the lab's largest"
)
cost, budget = capacity_cost(d_k, n_max, trials), caps().run
cap_notes([run_cost_note("This run", cost, budget)])
g2 = gate_sliders("capacity", alpha=lab.CAPACITY_GATES.alpha)
if not cost.within(budget):
    st.error(
        f"Can't run this: {trials} streams of {n_max} pairs at d_k = {d_k} would take about "
        f"{format_bytes(cost.bytes)} and "
        f"{cost.seconds:.1f} s, over what one run may take here. Average fewer streams, store fewer pairs or lower d_k."
    )
    r2 = None
else:
    r2 = run_or_error(run_capacity, **stream, n_max=n_max, trials=trials, **g2)
if r2 is not None:
    chart(
        plots.capacity_curves(r2),
        key="lab_capacity_chart",
        alt="Recall error and accuracy against the number of stored pairs, one line per mechanism, N = d_k marked.",
    )
    what_this_shows(r2)

# ---- 3. topic switch ---------------------------------------------------------------------------------------------

st.header("3 · Topic switch: forget to make room")
prose(
    """
**The question.** The stream talks about topic A for a while, then switches to topic B. After the switch, what do
A's cues still return, and can B be read as cleanly as if A had never been written? Here the gated memories follow
an explicit reset rule: at the first pair of topic B they multiply their state by α_reset once (a trained gate
would learn to close at such a boundary). Memories without a gate cannot forget: whatever A left behind stays and
can interfere with B.
"""
)
a, b = st.columns(2)
n_a = a.slider("Pairs on topic A", 1, lab.MAX_PAIRS // 2, 16, bind="query-params", key="lab_topic_n_a")
n_b = b.slider("Pairs on topic B", 1, lab.MAX_PAIRS // 2, 8, bind="query-params", key="lab_topic_n_b")
g3 = gate_sliders("topic", alpha=lab.TOPIC_GATES.alpha, reset=True)
r3 = run_or_error(run_topic_switch, **stream, n_a=n_a, n_b=n_b, **g3)
if r3 is not None:
    chart(
        plots.topic_switch_figure(r3),
        key="lab_topic_chart",
        alt="Left: how much of topic A each mechanism still returns as topic B is written. Right: error on topic B "
        "with and without topic A first.",
    )
    what_this_shows(r3)

# ---- 4. per-channel retention ------------------------------------------------------------------------------------

st.header("4 · Per-channel retention: keep some facts long")
prose(
    """
**The question.** Some facts must last (a name given at the start); others matter only briefly (the last few
words). Gated DeltaNet has one gate per head, so everything it stores fades at the same rate. KDA has one gate per
key channel: here half its channels are slow and half fast, at **the same average decay** as Gated DeltaNet's
single gate. The long-lived facts are written with keys in KDA's slow channels and the short-lived ones in its fast
channels — a trained KDA learns to route keys like this; the lab routes them by construction, so the gates alone
make the difference. What survives in each?
"""
)
a, b = st.columns(2)
n_long = a.slider("Long-lived facts (written first)", 1, 16, 4, bind="query-params", key="lab_retention_long")
n_short = b.slider(
    "Short-lived facts (written after)",
    lab.RECENT_READS,
    lab.MAX_PAIRS // 2,
    32,
    bind="query-params",
    key="lab_retention_short",
)
g4 = gate_sliders("retention", alpha=lab.RETENTION_GATES.alpha, slow=True)
st.caption(
    f"{kda_split(d_k, g4)} The last {lab.RECENT_READS} short-lived facts are read back, with the long-lived ones."
)
r4 = run_or_error(run_retention, **stream, n_long=n_long, n_short=n_short, **g4)
if r4 is not None:
    chart(
        plots.retention_figure(r4),
        key="lab_retention_chart",
        alt="Left: what each gate keeps after a lag. Right: error on the long-lived facts as short-lived ones arrive.",
    )
    what_this_shows(r4)

# ---- 5. hybrid retrieval -----------------------------------------------------------------------------------------

st.header("5 · Hybrid retrieval: find the needle")
prose(
    """
**The question.** One pair — the needle — is written first; then pair after pair is written on top of it, far
past what a d_k × d_k state can hold. Asked for the needle at the end, pure KDA has had to make room, and the
exact detail is gone. The hybrid also kept a softmax cache of the same stream: its rule uses the cache's read when
one cached key clearly matches the cue. This is why Kimi Linear keeps a softmax layer every few layers.
"""
)
n_fill = st.slider("Pairs written after the needle", 0, lab.MAX_PAIRS, 48, bind="query-params", key="lab_needle_fill")
g5 = gate_sliders("needle", alpha=lab.NEEDLE_GATES.alpha, slow=True)
st.caption(kda_split(d_k, g5))
r5 = run_or_error(run_needle, **stream, n_fill=n_fill, **g5)
if r5 is not None:
    chart(
        plots.needle_curves(r5),
        key="lab_needle_chart",
        alt="The needle's recall error against the pairs stored after it, for pure KDA and for the hybrid.",
    )
    what_this_shows(r5)

# ---- the overview, at the top ------------------------------------------------------------------------------------

with overview:
    st.subheader("All mechanisms, all experiments")
    results = (r1, r2, r3, r4, r5)
    if all(r is not None for r in results):
        report = lab.LabReport(overwrite=r1, capacity=r2, topic_switch=r3, retention=r4, needle=r5)
        numbers = lab.comparison_table(report)
        show_table(numbers, key="lab_comparison_table", index=True, formats=lab.people_formats(numbers))
        st.caption(
            "One headline number per experiment, from the runs below with their current controls. Errors are "
            "‖read − value‖ for unit values: 0 is perfect, about 1 means nothing useful came back; “A kept” is how "
            "much of topic A's values its cues still return (1 = all, 0 = none)."
        )
    else:
        st.warning("Some experiments below could not run with these settings; the overview needs all five.")

# ---- the claim, on the first screen --------------------------------------------------------------------------

with claim_slot:
    ran = set(r1.mechanisms) if r1 is not None else set()
    # the sentence names these: the delta rule, addition, a fixed KDA state and the hybrid
    if r5 is not None and lab.HYBRID in ran and "kda" in ran and "deltanet" in ran and "linear_attention" in ran:
        st.markdown(
            "**The same stream, every mechanism: the delta rule updates a fact that addition can only blur, and the "
            "hybrid's softmax cache finds the needle a fixed KDA state has lost.**"
        )
        m1, m2 = st.columns(2)
        fmt = lab.people_number
        m1.metric(
            "overwrite: error of the new value, DeltaNet vs linear attention",
            f"{fmt(r1.error_v2['deltanet'])} vs {fmt(r1.error_v2['linear_attention'])}",
            help="‖read − v2‖ for unit values: 0 is the new value exactly, about 1 is nothing of it (experiment 1).",
        )
        m2.metric(
            f"needle after {r5.n_fill} more pairs: error, {lab.label(lab.HYBRID)} vs KDA",
            f"{fmt(r5.final_error[lab.HYBRID])} vs {fmt(r5.final_error['kda'])}",
            help="The needle's recall error at the end of experiment 5.",
        )
