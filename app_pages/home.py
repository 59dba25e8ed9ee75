"""Home: the lineage at a glance — memory vs length first (the lineage's story in one chart, and the first thing a
visitor sees drawn), then its table, the write-rule × gate grid and the 22,580× headline."""

from __future__ import annotations

import numpy as np
import streamlit as st

from lineage import plots, stages
from lineage.measure import footprints
from lineage.mechanisms import write_rule
from lineage.teach import ledger
from ui.display import chart, markdown_table, prose
from ui.first_chart import defer_rest
from ui.nav import PAGES
from ui.tour import start_tour

st.title("Attention Lineage")
prose(
    """
From GPT-2 (2019) to the Kimi Linear hybrid (2025), the big changes to attention were changes to memory: what a
model keeps about the text so far, how it updates it, what it lets fade, and how it reads it back. Each stage
below fixed one problem of the stage before and paid for it with a new one. Every stage page runs the real
mechanism live, on this machine, and animates it token by token.
"""
)
if st.button("Start the tour: GPT-2 →", type="primary", key="home_start", shortcut="Shift+N", help="Shift+N"):
    start_tour()

st.subheader("Memory against context length, every stage")
compare = footprints.COMPARE_LAYER
seq_lens = np.array([2**i for i in range(21)])  # 1 token to 1,048,576 (Kimi Linear's context)
per_stage = {s.key: footprints.memory_per_layer(s.key, seq_lens) for s in stages.all_stages()}
# The hybrid's saving is measured against the same layer with MLA everywhere (the article's "−75%"), not against GPT-2:
# its MLA layers also cache less per token than GPT-2's heads.
all_mla = footprints.custom_spec(
    n_layers=1,
    n_heads=compare["n_heads"],
    n_kv_heads=compare["n_heads"],
    head_dim=compare["head_dim"],
    layer_kinds=("mla",),
    dtype="bf16",
    name="all-MLA",
)
mla_bytes = np.asarray(footprints.kv_cache_curve(all_mla, seq_lens, "bf16").total_bytes, dtype=np.float64)
home_hybrid = footprints.custom_spec(
    n_layers=stages.HYBRID_EVERY,
    n_heads=compare["n_heads"],
    n_kv_heads=compare["n_heads"],
    head_dim=compare["head_dim"],
    layer_kinds=stages.stage("hybrid").layer_kinds,
    dtype="bf16",
    name="hybrid",
)
longest = int(seq_lens[-1])
saving = ledger.hybrid_saving(home_hybrid, longest, "bf16")  # the hybrid line below, against the all-MLA line
n_kda = stages.HYBRID_EVERY - 1
kimi = footprints.MODELS["kimi-linear-48b"]
kimi_saving = ledger.hybrid_saving(kimi, longest, "bf16")
chart(
    plots.memory_by_stage(
        seq_lens,
        per_stage,
        notes={
            "hybrid": f"{n_kda} KDA : 1 MLA layers<br>−{saving.total:.1%} against all-MLA at 1M<br>"
            f"({ledger.SAVING_TOTAL})"
        },
        baseline=("All-MLA, same width", "(the article's −75% baseline)", mla_bytes),
        title="Bytes one layer holds while decoding (log-log)",
    ),
    key="home_memory",
    alt="Bytes held per layer against context length, labelled at the line ends: GPT-2 and the KV cache grow "
    "fastest, all-MLA grows below them, the hybrid a quarter of all-MLA, and the six fixed-state stages stay flat "
    "near 100 kB.",
)
fixed = [per_stage[s.key][-1] for s in stages.all_stages() if s.in_grid]
st.caption(
    f"One layer {compare['n_heads']} heads × {compare['head_dim']} wide (GPT-2's attention width), bf16. GPT-2 and "
    "the KV cache keep a key and a value per head per token; the fixed-state stages keep their state (plus a short "
    f"convolution's last inputs where the layer has one), {plots.format_bytes(min(fixed))}–"
    f"{plots.format_bytes(max(fixed))} whatever the context. The hybrid averages {n_kda} KDA layers and one MLA layer, "
    f"and MLA caches {all_mla.kv_lora_rank} + {all_mla.rope_dim} latent numbers per token (DeepSeek's sizes) instead "
    f"of GPT-2's {2 * compare['n_heads'] * compare['head_dim']:,} keys and values: so at 1M it sits "
    f"{per_stage['gpt2'][-1] / per_stage['hybrid'][-1]:.0f}× below GPT-2, of which only the layer ratio is the "
    f"hybrid's saving. Like for like — against the same layers all MLA, at {longest:,} tokens — it saves "
    f"{saving.text()}. Kimi Linear's own schedule ({kimi_saving.n_mla} MLA of {kimi_saving.n_layers} layers, from its "
    f"config.json) saves {kimi_saving.text()}: the article's “−75%”. Computed by "
    "`lineage.measure.footprints.memory_per_layer` "
    "and `lineage.measure.footprints`; hover a line for exact bytes."
)

# A fresh visitor's first run ends here, and the rest comes once the browser has drawn the chart above
defer_rest()

st.subheader("The lineage")
st.markdown(
    markdown_table(
        [
            {
                "Stage": s.title,
                "Representative": s.representative,
                "Year": s.year,
                "Memory mechanism": s.summary,
                "Problem solved": s.problem_solved,
                "Cost introduced": s.cost_introduced,
            }
            for s in stages.all_stages()
        ]
    )
)

cells = stages.grid()
st.subheader(stages.grid_title(cells))
rules = " or ".join(f"*{r.name}* ({r.gloss})" for r in map(write_rule, stages.grid_rules()))
prose(
    f"""
Every fixed-memory stage runs the same loop over a K × V state S: optionally decay it, write the new key and
value, read it with the query. Two choices tell the stages apart. The **write rule**: {rules}. The **gate**: none,
one decay per head, or one decay per key channel. Pick a cell to open its page.
"""
)
page_of = {entry.stage: entry for entry in PAGES if entry.stage}
gate_names = {"none": "no gate (α = 1)", "scalar": "one gate per head", "channel": "a gate per key channel"}


def stage_cell(container, stage: stages.Stage) -> None:
    """A link to the stage's page, or its name alone while the page does not exist yet."""
    entry = page_of.get(stage.key)
    if entry is None:
        container.markdown(stage.title)
        container.caption(f"{stage.year} · page not built yet")
    else:
        container.page_link(entry.file, label=stage.title, icon=entry.icon)
        container.caption(str(stage.year))


widths = [1] + [2] * len(stages.GRID_GATES)
header = st.columns(widths)
header[0].markdown("*write rule \\ gate*")
for col, gate in zip(header[1:], stages.GRID_GATES, strict=True):
    col.markdown(f"*{gate_names[gate]}*")
for rule in stages.grid_rules():
    row = st.columns(widths, border=True)
    row[0].markdown(f"**{write_rule(rule).name}** write")
    for col, gate in zip(row[1:], stages.GRID_GATES, strict=True):
        for stage in cells[(rule, gate)]:  # every stage of the cell: two in one cell are both drawn
            stage_cell(col, stage)
        if not cells[(rule, gate)]:
            col.caption("no stage yet")
st.markdown("The softmax family sits outside the grid: it keeps every key and value instead of a fixed state.")
outside = [s for s in stages.all_stages() if not s.in_grid]
for col, stage in zip(st.columns(len(outside), border=True), outside, strict=True):
    stage_cell(col, stage)

ratio = footprints.lineage_ratio()
st.subheader(f"{int(ratio.article_to_nominal):,} GPT-2s?")  # the article's title; the metrics below name both counts
gpt2 = footprints.PARAMETER_FACTS["gpt2"]
k3, k3_article = footprints.PARAMETER_FACTS["kimi-k3"], footprints.PARAMETER_FACTS["kimi-k3-article"]
r1, r2, r3, r4 = st.columns(4)
r1.metric("GPT-2 parameters", f"{gpt2.parameters:,}", help=f"{gpt2.how}: {gpt2.source}")
r2.metric("Kimi K3 parameters (its config)", f"{k3.parameters:,}", help=f"{k3.how}: {k3.source}")
r3.metric("GPT-2s in one Kimi K3 (the article's)", f"{int(ratio.article_to_nominal):,}", help=ledger.RATIO_NOMINAL)
r4.metric("GPT-2s in one Kimi K3 (its config's)", f"{int(ratio.config_to_nominal):,}", help=ledger.RATIO_CONFIG)
st.markdown(
    f"""
The article this app follows puts **{int(ratio.article_to_nominal):,}** in its title:
{ratio.arithmetic(ratio.k3_article, ratio.gpt2_nominal)}, with the decimals dropped ({ledger.RATIO_NOMINAL}).
K3's configuration is public now, and the count stated with it is {k3.parameters / 1e12:g}T, which the article
rounds to {k3_article.parameters / 1e12:g}T: {ratio.arithmetic(ratio.k3_config, ratio.gpt2_nominal)}, so
**{int(ratio.config_to_nominal):,}**. Over GPT-2's exact {gpt2.parameters:,} parameters, counted from its config,
the two give {ratio.config_to_exact:,.0f} and {ratio.article_to_exact:,.0f}. Either way, parameters are not the story
told here: the mechanisms of memory are.
"""
)
st.caption(
    f"GPT-2: {gpt2.how}. Kimi K3: **{k3.how}** — {k3.source}. The article's {k3_article.parameters / 1e12:g}T: "
    f"**{k3_article.how}** — {k3_article.source}."
)
