"""A stage page's story chart, composed once for the app (``ui.story.story_chart``, the GPT-2 and KV-cache pages) and
the static site (:mod:`lineage.site`): on a linear-memory stage the state as a fact table over the story
(:func:`lineage.plots.story.story_memory`) with the held answers and each step's sentence, its colour range set by the
fact cells; on the softmax stages the attention over the story beside what each token costs
(:func:`lineage.plots.story.attention_story`); and the key line that goes under either."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from lineage.plots.palette import MEMORY_COLOURS
from lineage.plots.story import HELD_SPREAD, attention_story, story_memory
from lineage.plots.vocabulary import spread_coinciding
from lineage.teach.claims import held_over_time, softmax_step_sentences, step_sentences
from lineage.teach.story import FILLER, FILLER_VALUE

ALT = (
    "Animated state of the memory over the story, rows named by keys and columns by values, beside the share of each "
    "query's answer the memory holds after every step."
)


def fact_cells(story, column_labels: list[str]) -> tuple[list[int], list[int]]:
    """The rows and columns of the facts (not the filler, a spare channel or the normaliser z): they set the story
    chart's colour range, so a filler row or a z column far larger than any fact does not flatten the facts."""
    rows = [i for i, r in enumerate(story.row_labels) if r != FILLER and not r.startswith("ch ")]
    cols = [j for j, c in enumerate(column_labels) if c not in (FILLER_VALUE, "z")]
    return (rows or list(range(story.K))), (cols or list(range(len(column_labels))))


def key_line(story, *, normaliser: bool = False, extra: str = "") -> str:
    """The one-line key under a story chart: what ‖, …, a→b (and z, ch i) mean, and anything the chart clips."""
    return "Key: " + " · ".join(p for p in (story.key_line(normaliser=normaliser), extra) if p) + "."


@dataclass(frozen=True)
class StoryChart:
    fig: go.Figure
    key: str  # the key line under it
    alt: str = ALT  # its alt text


def story_chart(run, story, *, start: int, normaliser: bool = False) -> StoryChart:
    """The story chart of ``run`` (a linear-memory stage's run on ``story``) opening at step ``start``, and its key
    line. ``normaliser``: the state has one more column, linear attention's z."""
    columns = story.column_labels + (["z"] if normaliser else [])
    rows, cols = fact_cells(story, columns)
    states = np.asarray(run.states)
    facts_max = float(np.abs(states[:, rows][:, :, cols]).max())
    clipped = float(np.abs(states).max()) > facts_max * (1 + 1e-9)
    held = held_over_time(run, story)
    fig = story_memory(
        run.states,
        row_labels=story.row_labels,
        column_labels=columns,
        step_labels=story.labels,
        sentences=step_sentences(run, story),
        held=held,
        start=start,
        scale_rows=rows,
        scale_cols=cols,
    )
    extra = []
    if clipped:
        extra.append(
            f"colours span the fact cells (±{facts_max:.2f}); the filler row"
            + (" and z run" if "z" in columns else " runs")
            + " past, at the end colour (hover for their values)"
        )
    extra.append("right panel: the right value read back, less anything mixed in")
    if any(spread_coinciding(held, offset=HELD_SPREAD)[1].values()):
        extra.append(f"answers that read back alike are drawn {HELD_SPREAD * 100:.0f} points apart (hover: values)")
    return StoryChart(fig, key_line(story, normaliser="z" in columns, extra=" · ".join(extra)))


RECOMPUTE_ALT = (
    "Animated attention of head 0 over the story's tokens beside the rows projected per token, without and with a "
    "cache, with a marker at the current step."
)
CACHE_ALT = (
    "Animated attention of head 0 over the story's tokens beside the bytes its cache holds and the bytes read so far, "
    "with a marker at the current step."
)


def recompute_story_chart(run, story, *, start: int) -> StoryChart:
    """GPT-2's story chart: ``run`` (a ``SoftmaxRun`` on ``story``) attending over the story, beside the Q/K/V rows
    each token projects without a cache and with one."""
    cost = run.cost
    fig = attention_story(
        run.trace.attn,
        step_labels=story.labels,
        sentences=softmax_step_sentences(run, story, "gpt2"),
        series={"no cache": cost.rows_recompute, "KV cache": cost.rows_cached},
        series_title="Q/K/V rows projected for this token",
        y_title="rows",
        start=start,
    )
    return StoryChart(fig, key_line(story), RECOMPUTE_ALT)


def cache_story_chart(run, story, *, start: int) -> StoryChart:
    """The KV cache's story chart: ``run`` attending over the story, beside the bytes head 0's cache holds and the
    bytes read so far."""
    held = run.trace.cache_bytes  # KVCache.nbytes of head 0 after each step
    fig = attention_story(
        run.trace.attn,
        step_labels=story.labels,
        sentences=softmax_step_sentences(run, story, "kv_cache"),
        series={"bytes held": held, "bytes read so far": held.cumsum()},
        series_title="Head 0's cache",
        y_title="bytes",
        start=start,
        colours={"bytes held": MEMORY_COLOURS["cache"]},  # a cache: the colour of what grows, on every page
    )
    return StoryChart(fig, key_line(story), CACHE_ALT)
