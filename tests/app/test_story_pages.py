"""Every stage page opens with its claim on the story: the number shown first is the one lineage.teach.claims computes
for
the page's own run, the first chart is the story's, and everything step-dependent in it lives in its frames. The
ledger's computed rows follow its inputs; the tour runs Home → stages → ledger → labs."""

from __future__ import annotations

import numpy as np
import pytest

from lineage import schedules
from lineage.measure import footprints
from lineage.teach import claims, story
from lineage.teach.story import make_story
from tests.app.util import figures, rerun, run_page
from ui.nav import HOME_ALIAS, PAGES, neighbours, stage_pages, tour

STORY = make_story(32, 8, 8)  # the pages' defaults
DEFAULT = claims.Knobs()


def _expected(stage: str) -> str:
    t = {m: claims.trace_story(m, STORY, DEFAULT) for m in ("linear_attention", "deltanet", "gated_deltanet", "kda")}
    if stage == "linear_attention":
        return f"{claims.overwrite_error(t['linear_attention'], STORY):.2f}"
    if stage == "deltanet":
        return f"{claims.overwrite_error(t['deltanet'], STORY):.3f}"
    if stage == "mamba2":
        return f"{claims.topic_a_held(claims.trace_story(stage, STORY, DEFAULT), STORY):.0%}"
    if stage == "gated_deltanet":  # its own claim: forgets and edits in one run, both numbers
        run = t["gated_deltanet"]
        return f"{claims.topic_a_held(run, STORY):.0%} · {claims.overwrite_error(run, STORY):.3f}"
    return f"{claims.long_fact_held(claims.trace_story(stage, STORY, DEFAULT), STORY):.0%}"


@pytest.mark.parametrize("stage", ["linear_attention", "deltanet", "mamba2", "gla", "gated_deltanet", "kda"])
def test_linear_stage_opens_with_its_claim_and_the_story_chart(stage):
    at = run_page(stage)
    first = at.metric[0]
    assert first.value == _expected(stage), (first.label, first.value)
    fig = figures(at)[0]  # the first chart on the page is the story's
    assert list(fig["data"][0]["y"]) == STORY.row_labels  # rows named by the keys that own them
    for frame in fig["frames"]:
        t = int(frame["name"])
        marker = [s for s in frame["layout"]["shapes"] if s.get("name") == "step_marker"]
        assert [(s["x0"], s["x1"]) for s in marker] == [(t, t)]
        assert any(a["text"].startswith(f"<b>Step {t}</b>") for a in frame["layout"]["annotations"])
    assert any(c.value.startswith("Checked against the reference loop") for c in at.caption)


@pytest.mark.parametrize("stage", ["linear_attention", "deltanet", "mamba2", "gla", "gated_deltanet", "kda"])
def test_the_shortest_sequence_the_page_offers_still_tells_the_story(stage):
    # the T slider starts where the story fits: its smallest value runs the story and shows the claim, no error
    at = run_page(stage)
    slider = at.slider(key=f"{stage}_T")
    assert slider.min == story.MIN_T
    slider.set_value(slider.min)
    rerun(at)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.metric[0].value.strip() and figures(at)


def test_deltanet_claim_follows_beta_and_says_when_it_fails():
    at = run_page("deltanet")
    assert at.metric[0].value == "0.000" and not any("does not hold" in w.value for w in at.warning)
    at.slider(key="deltanet_beta").set_value(0.5)
    rerun(at)
    run = claims.trace_story("deltanet", STORY, claims.Knobs(beta=0.5))
    assert at.metric[0].value == f"{claims.overwrite_error(run, STORY):.3f}" != "0.000"
    assert any("does not hold" in w.value and "β = 0.5" in w.value for w in at.warning)


def test_gated_deltanet_claim_follows_the_switch_gate():
    at = run_page("gated_deltanet")
    forgets = claims.trace_story("gated_deltanet", STORY, DEFAULT)
    assert at.metric[0].value == f"0% · {claims.overwrite_error(forgets, STORY):.3f}"
    at.slider(key="gated_deltanet_switch").set_value(1.0)
    rerun(at)
    open_gate = claims.trace_story("gated_deltanet", STORY, claims.Knobs(alpha_switch=1.0))
    assert at.metric[0].value == f"100% · {claims.overwrite_error(open_gate, STORY):.3f}"
    assert any("does not hold" in w.value for w in at.warning)


@pytest.mark.parametrize(
    ("page", "label_start", "value"), [("gpt2", "Q/K/V rows", "528 vs 32"), ("kv_cache", "cache of head 0", "4,096 B")]
)
def test_softmax_stage_opens_with_its_claim(page, label_start, value):
    at = run_page(page)
    assert at.metric[0].label.startswith(label_start) and at.metric[0].value == value
    fig = figures(at)[0]
    assert fig["layout"]["xaxis"]["ticktext"][0] == "0 name→Kim"  # the time axis names the story's tokens


def test_hybrid_opens_with_the_needle_and_extends_the_decode_to_the_crossing():
    at = run_page("hybrid", hybrid_T=12)
    s = make_story(32, claims.HYBRID_STATE_K, 8)
    needle = claims.hybrid_needle(s, claims.trace_story("kda", s, claims.Knobs(alpha_switch=1.0)))
    assert at.metric[0].value == f"{needle['softmax']:.3f}"
    cross = next(f for f in figures(at) if f["layout"].get("title", {}).get("text", "").startswith("One layer's"))
    names = [t["name"] for t in cross["data"]]
    assert "MLA layer: computed beyond it" in names and "MLA layer: measured in the live decode" in names
    mla_ext = np.asarray(cross["data"][names.index("MLA layer: computed beyond it")]["y"], dtype=float)
    kda = np.asarray(cross["data"][names.index("KDA layer: measured in the live decode")]["y"], dtype=float)
    assert mla_ext[-1] > kda[-1] and mla_ext[0] < kda[0]  # the extension reaches past the crossing


def test_ledger_rows_follow_the_inputs():
    at = run_page("ledger")
    text = " ".join(m.value for m in at.markdown)
    assert "−74.1% cache" in text and "22,580" in text and "not strictly 3:1" in text
    at.select_slider(key="ledger_every").set_value(2)
    rerun(at)
    text = " ".join(m.value for m in at.markdown)
    spec = footprints.kimi_linear_spec(schedules.periodic_schedule(27, 2))
    held, baseline = (footprints.footprint(s, 1 << 20).kv_cache_bytes for s in (spec, footprints.all_mla(spec)))
    cut = 1 - held / baseline
    assert f"−{cut:.1%} cache" in text and "−74.1% cache" not in text


def test_the_tour_runs_from_home_through_the_stages_to_the_ledger_and_labs():
    stops = [p.url_path for p in tour()]
    assert stops[0] == "home" and stops[1] == "gpt2"
    stage_stops = [p.url_path for p in stage_pages()]
    assert stops[1 : 1 + len(stage_stops)] == stage_stops, "the stages in the lineage's order, from the stage table"
    lineage = [p.url_path for p in tour() if p.section == "The lineage"]
    assert lineage[-1] == "ledger", "the ledger closes the lineage, after the stages (and any page after the article)"
    assert neighbours("ledger")[1].section == "Labs"
    assert HOME_ALIAS not in [p.url_path for p in PAGES if p.url_path != "home"]
    at = run_page("home")
    assert at.button(key="home_start")
    at.button(key="home_start").click()
    rerun(at)
    assert at.metric[0].value == "528 vs 32"  # the Start button opened GPT-2, the first stop
