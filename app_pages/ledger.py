"""Claims ledger: every number the article states, beside the app's own value, a verdict and the page behind it."""

from __future__ import annotations

import streamlit as st

from lineage import schedules
from lineage.plots.story import decode_ratio_curves
from lineage.teach import ledger, overview
from ui.display import chart, markdown_table
from ui.nav import entry_for
from ui.running import run_or_stop

CONTEXTS = overview.LEDGER_CONTEXTS
BATCHES = overview.LEDGER_BATCHES

st.title("Claims ledger")
st.caption(
    "Every number the article states, with the app's value: computed from a cited config, computed live on the "
    "story, or quoted with its source where the app cannot compute it. Change the inputs below and the computed "
    "rows follow."
)

OWN = schedules.KIMI_LINEAR_SCHEDULE
a, b, c = st.columns(3)
every = a.select_slider(
    "MLA every N layers",
    options=[0, 2, 3, 4, 5, 6, 8],
    value=0,
    format_func=lambda n: f"Kimi Linear's own ({OWN.count('mla')} of {len(OWN)})" if n == 0 else f"every {n}",
    bind="query-params",
    key="ledger_every",
    help=f"The hybrid's schedule: {len(OWN)} layers of Kimi Linear's shapes, an MLA layer every N of them; 'Kimi "
    "Linear's own' is the released model's schedule.",
)
context = b.select_slider(
    "Context (tokens)",
    CONTEXTS,
    value=CONTEXTS[-1],
    format_func=lambda n: f"{n:,}",
    bind="query-params",
    key="ledger_context",
)
batch = c.select_slider(
    "Batch",
    BATCHES.tolist(),
    value=1,
    bind="query-params",
    key="ledger_batch",
    help="Sequences decoded together: every cache and state is one per sequence, the weights are shared.",
)
schedule = OWN if every == 0 else schedules.periodic_schedule(len(OWN), every)


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def ledger_rows(schedule: tuple[str, ...], context: int, batch: int) -> list[ledger.LedgerRow]:
    return ledger.ledger(schedule, context, batch)


rows = run_or_stop(ledger_rows, tuple(schedule), context, batch)
counts = overview.verdict_counts(rows)
m1, m2, m3 = st.columns(3)
m1.metric("verified", counts["verified"])
m2.metric("differs (the app says why)", counts["differs"])
m3.metric("quoted only (with source)", counts["quoted only"])

st.markdown(markdown_table([ledger.table_cells(r, entry_for(r.page).title, f"/{r.page}") for r in rows]))

st.subheader("Where “6× decode at 1M” comes from")
st.markdown(
    "A decode step reads the active weights once and every sequence's cache and state once. Time per step is at least "
    "bytes ÷ bandwidth, so the ratio of the two models' floors is their speed-up at the same batch. With one "
    "sequence the weights (the same for both) dominate and the ratio stays low; with many sequences the caches "
    "dominate and the ratio climbs towards the ratio of cache bytes — and stops there."
)
decode = overview.decode_ratios(schedule, context, batch)
ceiling = decode.ceiling
chart(
    decode_ratio_curves(
        decode.batches,
        decode.ratios,
        paper=overview.PAPER_DECODE,
        ceiling=ceiling,
        title="Bandwidth floor: all-MLA over the hybrid, by batch",
    ),
    key="ledger_decode_ratio",
    alt="Decode-time ratio of all-MLA over the hybrid against batch size, rising towards the cache ratio, below 6×.",
)
at = decode.at
st.markdown(
    f"At {context:,} tokens and batch {batch}, the floor gives **{at:.2f}×**; no batch takes it past "
    f"**{ceiling:.2f}×**, below the paper's 6× ({ledger.KIMI_PAPER}, abstract). A bytes-read model leaves out the "
    "attention arithmetic over every cached token in each MLA layer and the kernels' efficiency; the paper measured "
    "its 6×, and the app cannot reproduce that measurement here."
)
k3 = ledger.hybrid_saving("kimi-k3", ledger.ONE_M)
st.caption(
    f"Kimi K3's configuration is public now, quoted in public threads (secondary sources): {k3.where} cache, so "
    f"against all-MLA it saves {k3.text()}. Its rows above are computed from that config; the decode model here "
    "keeps Kimi Linear's weights, since K3's activated count is known only as a nominal figure."
)
