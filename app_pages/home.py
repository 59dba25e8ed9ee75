"""Home: the lineage at a glance — memory vs length first (the lineage's story in one chart, and the first thing a
visitor sees drawn), then its table, the write-rule × gate grid and the 22,580× headline."""

from __future__ import annotations

import streamlit as st

from lineage import plots, stages
from lineage.mechanisms import write_rule
from lineage.teach.overview import CHART_ALT, CHART_TITLE, lineage_rows, memory_overview, ratio_section
from lineage.train.findings import capacity_pointer
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
overview = memory_overview()
chart(
    plots.memory_by_stage(
        overview.seq_lens,
        overview.per_stage,
        notes=overview.notes,
        baseline=overview.baseline,
        title=CHART_TITLE,
    ),
    key="home_memory",
    alt=CHART_ALT,
)
st.caption(overview.caption)

# A fresh visitor's first run ends here, and the rest comes once the browser has drawn the chart above
defer_rest()

st.subheader("The lineage")
st.markdown(markdown_table(lineage_rows()))

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
# The pointer to trained models says what their capacity record shows (lineage.train.findings, from the record)
if said := capacity_pointer():
    learned = next(entry for entry in PAGES if entry.url_path == "learned_memory")
    st.markdown(f"**Trained, not set by hand.** {said}")
    st.page_link(learned.file, label=learned.title, icon=learned.icon)

ratio = ratio_section()
st.subheader(ratio.heading)
for column, (label, value, help_text) in zip(st.columns(len(ratio.metrics)), ratio.metrics, strict=True):
    column.metric(label, value, help=help_text)
st.markdown(ratio.text)
st.caption(ratio.caption)
