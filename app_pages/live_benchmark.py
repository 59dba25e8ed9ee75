"""Live benchmark: one decoding step timed against context on this device — the bandwidth wall, measured."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import streamlit as st

from lineage import plots
from lineage.device import device_info
from lineage.measure import bench_decode
from lineage.ops.softmax import decode_step
from ui.caps import benchmark_memory_bytes, caps
from ui.display import chart, prose, show_code, table, what_to_notice
from ui.results import BENCHMARKS
from ui.running import run_or_stop
from ui.session import device_label, remember_measured_bandwidth

NOISY_SPREAD = 2.0  # a KDA step whose medians differ more than this across contexts was disturbed by other work
GDN2_STEP = "Gated DeltaNet-2 recurrent step"  # the stage after the article: KDA's state, two gate vectors a token


st.title("Live benchmark")
claim_slot = st.container()  # the page's claim and its number, filled below (measured once a run exists)
prose(
    f"""
The Memory & cost page *computes* how many bytes a decoding step must read. This page *measures* what that costs
on the machine running this app. We time one decoding step of two layers of the same width
({bench_decode.HEADS} heads × {bench_decode.HEAD_DIM}, fp32):

- a **softmax layer with a KV cache** of N tokens: append the new key and value, then one query attends to all N
  keys and values — every cached byte is read once, with a multiply and an add per number;
- a **KDA layer**: one step of its recurrence on a fixed {bench_decode.HEAD_DIM} × {bench_decode.HEAD_DIM} state per
  head, whatever N is.

We also time a plain memory copy (`dst.copy_(src)`), the fastest this device moves bytes. If decoding is limited
by bandwidth, not arithmetic, the KV step's time grows in step with N and its bytes read per second approach the
copy's, while the KDA step stays flat.
"""
)
CLAIM = (
    "**Decoding is bound by memory bandwidth: a KV-cache step reads its whole cache, so its time grows with the "
    "context, while a KDA step reads a fixed state and stays flat.**"
)

cap = benchmark_memory_bytes()  # ui.caps: on a CPU, less than one run's budget of the memory every visitor shares
cap_context = bench_decode.context_cap(cap)
st.info(
    f"**{device_label()}.** Benchmark memory is capped at {plots.format_bytes(cap)} on this device type "
    f"(two copies of the cache plus the attention scores, from `bench_decode.memory_estimate`), so contexts go up "
    f"to {cap_context:,} tokens ({plots.format_bytes(bench_decode.kv_bytes(cap_context))} of keys and values)."
)

left, right = st.columns([3, 1])
budgets = [b for b in bench_decode.BUDGETS if b in caps().benchmark_budgets]
budget = left.selectbox(
    "Budget",
    budgets,
    index=budgets.index("standard"),
    format_func=bench_decode.budget_label,
    bind="query-params",
    key="live_benchmark_budget",
)
if len(budgets) < len(bench_decode.BUDGETS):
    left.caption(
        f"Budgets on {device_info().type}: {', '.join(budgets)} (so every run stays fast for everyone). For the full "
        "report on this machine (the full budget), run `python -m lineage bench decode`."
    )
right.write("")
clicked = right.button("Run benchmark", type="primary", key="live_benchmark_run")


def benchmark(budget: str) -> bench_decode.DecodeBenchmark:
    """One run of the decode benchmark on the live device, with a progress bar."""
    bar = st.progress(0.0, text=f"measuring on {device_label()} …")
    result = bench_decode.run_decode_benchmark(
        budget, max_context=cap_context, progress=lambda f, message: bar.progress(f, text=message)
    )
    bar.empty()
    return result


# Results live in a store of the process (ui.results), not in st.cache_data: any client can clear that cache, and so
# force run after run. A budget is measured on request, at most once a minute for all visitors together; a budget
# already requested in this session is shown again from the store.
requested = st.session_state.setdefault("_live_benchmark_requested", set())
if clicked:
    requested.add(budget)
key = (device_label(), budget)
stored = BENCHMARKS.get(key) if budget in requested else None
if clicked or (budget in requested and stored is None):
    stored = run_or_stop(BENCHMARKS.measure, key, lambda: benchmark(budget))
if stored is None:
    st.caption("Press **Run benchmark** to measure. Results are kept for an hour, for every visitor of this server.")
    result = None
else:
    result = stored.value
    remember_measured_bandwidth(result.copy_bytes_per_s, f"{result.device_label}, memory copy")
    wait = BENCHMARKS.next_run_in_s(key)
    st.caption(
        f"Measured {stored.age_s():.0f} s ago on this server. One measurement of a budget starts at most once a "
        f"minute for all visitors together"
        + (f"; the next can start in {wait:.0f} s." if wait > 0 else "; press Run benchmark for a new one.")
    )

with claim_slot:
    st.markdown(CLAIM)
    if result is None:
        state = bench_decode.HEADS * bench_decode.HEAD_DIM**2 * bench_decode.DTYPE_BYTES  # one KDA layer's state
        st.metric(
            f"bytes one step reads at {cap_context:,} tokens: KV cache vs KDA state (computed)",
            f"{plots.format_bytes(bench_decode.kv_bytes(cap_context))} vs {plots.format_bytes(state)}",
            help="Press Run benchmark below to measure what reading them costs on this machine.",
        )
    else:
        st.metric(
            f"one decoding step at {result.contexts[-1]:,} tokens: KV cache vs KDA (measured, median)",
            f"{result.kv_ms[-1]:.3g} ms vs {result.kda_ms[-1]:.3g} ms",
            help=f"At {result.contexts[0]:,} tokens: {result.kv_ms[0]:.3g} ms vs {result.kda_ms[0]:.3g} ms.",
        )

if result is not None:
    r = result
    top = -1  # the largest context measured
    a, b, c, d = st.columns(4)
    a.metric("memory copy", f"{r.copy_bytes_per_s / 1e9:,.2f} GB/s")
    b.metric(f"KV step at {r.contexts[top]:,} tokens", f"{r.kv_ms[top]:.3g} ms", help="median ms per token")
    c.metric("its bytes read per second", f"{r.kv_bytes_per_s[top] / 1e9:,.2f} GB/s")
    d.metric(
        "share of its bound",
        f"{r.kv_fraction_of_read[top]:.0%}",
        help="Its bytes per second over those of reading the same bytes once (a sum over the cache), measured beside "
        "it at the same context.",
    )
    st.caption(
        f"Median of {r.repeats} runs after {r.warmup} warm-up, {r.device_label}; the whole run took "
        f"{r.wall_seconds:.1f} s. Other work on this machine (other visitors, other programs) makes single runs "
        "noisy; the median resists it, but does not remove it."
    )
    chart(
        plots.decode_time_vs_context(
            r.contexts,
            {"KV-cache softmax step": r.kv_ms, "KDA recurrent step": r.kda_ms, GDN2_STEP: r.gdn2_ms},
            floor_ms=r.kv_floor_ms,
            mechanisms={"KV-cache softmax step": "softmax", "KDA recurrent step": "kda", GDN2_STEP: "gated_deltanet2"},
            title=f"One decoding step, {r.heads} heads × {r.head_dim}, on {r.device_type}",
        ),
        key="live_benchmark_time_chart",
        alt="Log-log milliseconds per decoding step against context: the KV-cache step rises with the context, the "
        "KDA and Gated DeltaNet-2 steps stay flat, the dotted bandwidth floor rises beneath the KV step.",
    )
    chart(
        plots.bandwidth_fraction(
            r.contexts, r.kv_fraction_of_read, bound_bytes_per_s=r.read_bytes_per_s, bound_name="reading the same bytes"
        ),
        key="live_benchmark_bandwidth_chart",
        alt="The KV-cache step's bytes read per second as a share of reading the same bytes once, against context.",
    )
    with st.expander("The numbers"):
        st.text("\n".join(bench_decode.settings_lines(r)))
        table(
            pd.DataFrame(bench_decode.table_rows(r)),
            key="live_benchmark_numbers",
            formats={name: functools.partial(bench_decode.format_cell, name) for name in bench_decode.COLUMNS},
        )
        st.caption("The command line prints the same report: `python -m lineage bench decode`.")

    flops_per_byte = float(r.kv_flops_per_step[top] / r.kv_bytes_per_step[top])
    slower = np.flatnonzero(r.kv_ms > r.kda_ms)
    crossover = (
        f"From {r.contexts[slower[0]]:,} tokens on, the KV step is the slower of the two here."
        if slower.size
        else f"Up to {r.contexts[top]:,} tokens the KV step is still faster here than KDA's fixed cost."
    )
    kda_spread = float(r.kda_ms.max() / r.kda_ms.min())
    kda_point = (
        f"The KDA step stays flat — {r.kda_ms.min():.3g} to {r.kda_ms.max():.3g} ms at every context — because its "
        f"state is {r.kda_state_bytes:,} bytes whatever N is. {crossover}"
        if kda_spread < NOISY_SPREAD
        else f"The KDA step should be flat — its state is {r.kda_state_bytes:,} bytes whatever N is — yet this run "
        f"ranged from {r.kda_ms.min():.3g} to {r.kda_ms.max():.3g} ms: other work competed for the processor. "
        "Run it again; where the medians agree, they are the step's cost."
    )
    gdn2_ratio = float(np.median(r.gdn2_ms / r.kda_ms))
    gdn2_point = (
        f"Gated DeltaNet-2's step (after the article) holds KDA's state and adds an erase and a write gate per token: "
        f"it took {gdn2_ratio:.2g}× KDA's time here (median over the contexts), and stays flat as KDA's does."
    )
    notice = [
        f"The KV step's time grows about in proportion to the context: ×{r.contexts[top] / r.contexts[0]:,.0f} "
        f"more tokens cost ×{r.kv_ms[top] / r.kv_ms[0]:,.1f} the time (fixed overheads dominate the smallest "
        "contexts).",
        kda_point,
        gdn2_point,
        f"The KV step does {flops_per_byte:g} FLOP per byte it reads (2·H·N·(K+V) FLOPs over 4·H·N·(K+V) bytes), "
        f"so reading the cache, not computing, sets its time: at {r.contexts[top]:,} tokens it moves its bytes "
        f"{r.kv_fraction_of_read[top]:.0%} as fast as a plain read of the same bytes. The dotted floor is that read, "
        "timed at every context beside the step: a small cache sits in the processor's own caches and is read faster "
        "than main memory, so a bound measured once on a large copy would not hold there (it put small contexts "
        "above 100 %). The gap to the floor is the softmax and the two separate passes (keys, then values).",
    ]
    if np.any(r.kv_fraction_of_read > 1):
        over = r.contexts[r.kv_fraction_of_read > 1]
        notice.append(
            f"At {', '.join(f'{n:,}' for n in over)} tokens the step beat reading its own bytes: at that size the two "
            "timings are within noise of each other on this machine, not evidence of anything."
        )
    what_to_notice(notice)

show_code(decode_step, bench_decode.run_decode_benchmark, bench_decode.measure_copy_bandwidth, title="The code timed")
