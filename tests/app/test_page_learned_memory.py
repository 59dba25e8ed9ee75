"""Learned memory page: opens with the capacity record (who falls where, what the write rule and the gates buy,
Zoology's picture, where each point came from), shows the first recorded sweep with its command, trains a tiny config
live into curves and the learned gates, refuses requests over the cap, and re-runs a recorded point."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from lineage.plots import mixer_title
from lineage.train import findings, sweep
from lineage.train import loop as training
from tests.app.util import ROOT, figure, figures, run_page
from ui.nav import PAGES

RECORD = ROOT / "data" / "learned_memory_sweep.jsonl"
RESULTS = [r["result"] for r in sweep.read_results(RECORD)]
SUMMARIES = findings.summarise(RESULTS)
CAPACITY = findings.read_capacity()  # the CPU's part and the GPU's
CAPACITY_SUMMARIES = findings.summarise(r["result"] for r in CAPACITY)
needs_capacity = pytest.mark.skipif(not CAPACITY, reason="no capacity record in this copy")
CAPACITY_GRIDS = findings.capacity_grids()  # in the order of findings.capacity_records


def tiny(at, **changes):
    """The smallest live run: 10 steps of DeltaNet and KDA on MQAR with 2 pairs in 16 tokens."""
    at.multiselect(key="learned_memory_mixers").set_value(changes.get("mixers", ["deltanet", "kda"]))
    at.number_input(key="learned_memory_steps").set_value(changes.get("steps", 10))
    at.number_input(key="learned_memory_seconds").set_value(changes.get("seconds", 20.0))
    at.select_slider(key="learned_memory_T").set_value(16)
    at.slider(key="learned_memory_pairs_n").set_value(2)
    at.button(key="learned_memory_train").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture(scope="module")
def trained():
    return tiny(run_page("learned_memory", seed=0))


def test_page_is_registered_under_labs():
    entry = next(p for p in PAGES if p.url_path == "learned_memory")
    assert (entry.section, entry.file) == ("Labs", "app_pages/learned_memory.py")


def test_the_pairs_chart_is_the_record_at_each_settings_best_learning_rate_with_the_seeds_spread():
    at = run_page("learned_memory", seed=0)
    assert not at.exception and [t.value for t in at.title] == ["Learned memory"]
    fig = figure(at, f"MQAR at {RESULTS[0]['task']['seq_len']} tokens, width {findings.main_width(SUMMARIES)}")
    rows = findings.by_pairs(SUMMARIES) + findings.by_pairs(SUMMARIES, "none")
    assert len(fig["data"]) == len({(x.setting.mixer, x.setting.front_end) for x in rows}) > 0
    for trace in fig["data"]:
        xs = sorted(
            (x for x in rows if trace["name"] == f"{findings.label(x.setting, mixer_title)} (recorded)"),
            key=lambda x: x.setting.n_pairs,
        )
        assert xs, trace["name"]
        sizes = [x.setting.n_pairs for x in xs]
        assert np.allclose(trace["customdata"], sizes)  # the true size; drawn a little apart so none hides another
        assert np.allclose(trace["x"], sizes, atol=0.2) and len({round(float(v), 6) for v in trace["x"]}) == len(xs)
        assert np.allclose(trace["y"], [x.mean for x in xs])
        assert np.allclose(np.asarray(trace["y"]) + np.asarray(trace["error_y"]["array"]), [x.high for x in xs])
        assert np.allclose(np.asarray(trace["y"]) - np.asarray(trace["error_y"]["arrayminus"]), [x.low for x in xs])


def test_every_sentence_about_the_record_is_computed_from_it_and_the_caption_names_the_command():
    at = run_page("learned_memory", seed=0)
    shown = [m.value for m in at.markdown]
    for line in findings.solved_sentences(SUMMARIES, mixer_title) + findings.paper_checks(SUMMARIES, mixer_title):
        assert f"- {line}" in shown, line
    for line in findings.front_end_sentences(SUMMARIES, mixer_title):
        assert f"- {line}" in shown, line
    captions = " ".join(c.value for c in at.caption)
    assert findings.memory_caption(SUMMARIES, mixer_title) in captions
    for r in sweep.read_results(RECORD):
        assert r["run"]["command"] in captions
    whole = len(sweep.points_of(sweep.read_grid(ROOT / "data" / "learned_memory_grid.json"))[0])
    cpu = len(sweep.points_of(sweep.read_grid(ROOT / "data" / "learned_memory_grid_cpu.json"))[0])
    assert f"{len(RESULTS)} recorded points ({len(SUMMARIES)} setting" in captions
    sessions = {r["run"]["started"] for r in sweep.read_results(RECORD)}
    assert f"Run in {len(sessions)} session" in captions and f"from {min(sessions)} on" in captions
    assert f"of the {cpu} in data/learned_memory_grid_cpu.json" in captions
    assert f"(data/learned_memory_grid.json, {whole:,} points, for a cluster)" in captions
    assert (f"The other {cpu - len(RESULTS)} were not run" in captions) == (cpu > len(RESULTS))


def test_the_capacity_chart_shows_accuracy_against_what_one_layer_carries_when_recorded():
    at = run_page("learned_memory", seed=0)
    n = findings.capacity_pairs(SUMMARIES)
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    if n is None:
        assert not any("the memory one layer carries" in t for t in titles)
        return
    fig = figure(at, f"{n} pairs: accuracy against the memory one layer carries")
    assert fig["layout"]["xaxis"]["type"] == "log"
    for trace in fig["data"]:
        xs = sorted(
            (x for x in findings.by_width(SUMMARIES, n) if trace["name"].startswith(mixer_title(x.setting.mixer))),
            key=lambda x: x.state_size(),
        )
        assert np.allclose(trace["x"], [x.state_size() for x in xs]) and np.allclose(trace["y"], [x.mean for x in xs])


def test_the_defaults_are_the_measured_live_setting_and_the_front_end_can_be_taken_off():
    at = run_page("learned_memory", seed=0)
    assert at.multiselect(key="learned_memory_mixers").value == list(training.LIVE_MIXERS)
    assert at.slider(key="learned_memory_pairs_n").value == training.LIVE_TASK.n_pairs
    assert at.select_slider(key="learned_memory_T").value == training.LIVE_TASK.seq_len
    assert at.number_input(key="learned_memory_steps").value == training.LIVE_TRAINING.max_steps
    assert at.selectbox(key="learned_memory_front").value == "conv"
    at.selectbox(key="learned_memory_front").set_value("none")
    at = tiny(at, mixers=["softmax", "deltanet"], steps=2)
    models = at.session_state["_learned_memory_trained"]["models"]
    assert set(models) == {"softmax", "deltanet"}
    assert not any(name.endswith("convs") for model in models.values() for name, _ in model.named_modules())
    said = next(m.value for m in at.markdown if m.value.startswith("Softmax"))
    assert "with no convolution for any mixer (the ablation)" in said


def test_training_draws_one_curve_per_mechanism(trained):
    assert not trained.error, [e.value for e in trained.error]
    fig = figure(trained, "MQAR (Zoology): held-out accuracy while training")
    assert [t["name"] for t in fig["data"]] == ["DeltaNet", "KDA"]
    assert all(list(t["x"]) == [10.0] for t in fig["data"])
    summary = next(m.value for m in trained.markdown if m.value.startswith("DeltaNet: "))
    assert "after 10 steps" in summary and "Chance is 3.1%" in summary


def test_what_the_model_learned_shows_kda_gates_beta_and_state(trained):
    gates = figure(trained, "Learned α per key channel")
    z = np.asarray(gates["data"][0]["z"], dtype=float)
    assert z.shape == (16, 16) and ((z > 0) & (z <= 1)).all()  # 16 key channels × 16 tokens
    beta = figure(trained, "Learned per-token gate and write strength")
    assert [t["name"] for t in beta["data"]] == ["β (head 0)"]
    state = figure(trained, "The state under the learned gates and β")
    assert len(state["frames"]) == 16
    said = next(m.value for m in trained.markdown if m.value.startswith("Its gates are one per key channel"))
    assert "learned, not set" in said


def test_the_task_picker_says_where_each_task_comes_from():
    at = run_page("learned_memory", seed=0)
    for task, title, source in [
        ("mqar", "MQAR (Zoology)", "MQAR as Zoology generates it (Arora et al. 2023, arXiv 2312.04927, §3)"),
        ("palindrome", "Palindrome (Kimi Linear §5.1)", "(arXiv 2510.26692, §5.1, Figure 4a)"),
        ("stack", "Stack (Kimi Linear §5.1)", "(arXiv 2510.26692, §5.1, Figure 4c)"),
    ]:
        at.selectbox(key="learned_memory_task").set_value(task).run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.selectbox(key="learned_memory_task").format_func(task) == title
        notes = [c.value for c in at.caption if "arXiv" in c.value]
        assert len(notes) == 1 and source in notes[0], (task, notes)


def test_the_stack_note_states_the_stacks_the_page_trains_with():
    at = run_page("learned_memory", seed=0)
    at.selectbox(key="learned_memory_task").set_value("stack")
    at = tiny(at, mixers=["softmax"], steps=1)
    trained_task = at.session_state["_learned_memory_trained"]["task"]
    assert trained_task.task == "stack"
    note = next(c.value for c in at.caption if c.value.startswith("Stack as the Kimi Linear report"))
    assert f"{trained_task.n_stacks} stacks here against its 64" in note


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(steps=601), "601 steps asked for; the cap here is 600"),
        (dict(seconds=46.0), "46 s per mechanism asked for; the cap here is 45 s"),
        (dict(mixers=["softmax", "deltanet", "gla", "kda", "mamba2"]), "5 mechanisms chosen; one press trains at most"),
    ],
)
def test_requests_over_the_cap_are_refused_with_a_message(changes, message):
    at = tiny(run_page("learned_memory", seed=0), **changes)
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith("Not trained:") and message in errors[0]
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert not any("while training" in t for t in titles)
    caps_line = " ".join(c.value for c in at.caption)
    assert "Training is capped on cpu at 600 steps and 45 s per mechanism, 4 mechanisms per press" in caps_line


def test_a_recorded_point_re_runs_with_the_same_losses(monkeypatch):
    """The button re-runs a recorded point with its stored config and seed; its first steps' losses must match.
    (Shortened to 5 steps here to keep the test quick: the page compares whatever prefix it ran.)"""
    real = training.train
    monkeypatch.setattr(training, "train", lambda task, m, cfg, **kw: real(task, m, replace(cfg, max_steps=5), **kw))
    at = run_page("learned_memory", seed=0)
    box = at.selectbox(key="learned_memory_point")
    box.set_value(box.options[0]).run()
    at.button(key="learned_memory_rerun").click()
    at.run()
    assert not at.exception and not at.error
    said = next(m.value for m in at.markdown if m.value.startswith("Re-run"))
    assert "The training losses of all 5 steps match the recorded ones." in said


def test_the_page_opens_with_its_point_computed_from_the_record():
    at = run_page("learned_memory", seed=0)
    point = findings.capacity_headline(CAPACITY_SUMMARIES, mixer_title) or findings.headline(SUMMARIES, mixer_title)
    assert point is not None and at.markdown[0].value == f"**{point.claim}**"
    assert (at.metric[0].label, at.metric[0].value) == (point.label, point.shown)


@needs_capacity
def test_the_capacity_chart_is_the_record_at_one_width_with_spread_and_the_still_rising_points_marked():
    at = run_page("learned_memory", seed=0)
    rows = findings.by_pairs(CAPACITY_SUMMARIES)
    fig = figure(at, f"MQAR at {rows[0].setting.seq_len} tokens, width {rows[0].setting.width}: the capacity record")
    lines = [t for t in fig["data"] if t["name"].endswith("(recorded)")]
    assert len(lines) == len({x.setting.mixer for x in rows}) > 0
    for trace in lines:
        xs = sorted(
            (x for x in rows if trace["name"] == f"{mixer_title(x.setting.mixer)} (recorded)"),
            key=lambda x: x.setting.n_pairs,
        )
        assert np.allclose(trace["customdata"], [x.setting.n_pairs for x in xs])
        assert np.allclose(trace["y"], [x.mean for x in xs])
        assert np.allclose(np.asarray(trace["y"]) - np.asarray(trace["error_y"]["arrayminus"]), [x.low for x in xs])
    bounds = [t for t in fig["data"] if t["name"].startswith("still rising")]
    rising = [x for x in rows if x.still_rising]
    assert len(bounds) == (1 if rising else 0)
    if rising:
        assert sorted(bounds[0]["customdata"]) == sorted(x.setting.n_pairs for x in rising)


@needs_capacity
def test_every_capacity_sentence_is_computed_from_the_record_and_the_caption_says_where_the_points_came_from():
    at = run_page("learned_memory", seed=0)
    shown = [m.value for m in at.markdown]
    said = findings.falls_sentences(CAPACITY_SUMMARIES, mixer_title) + findings.step_sentences(
        CAPACITY_SUMMARIES, mixer_title
    )
    assert said and all(f"- {line}" in shown for line in said)
    grids = {f"data/{p.name}": len(sweep.points_of(sweep.read_grid(p))[0]) for p in CAPACITY_GRIDS}
    whole = len(sweep.points_of(sweep.read_grid(findings.CLUSTER_GRID))[0])
    captions = " ".join(c.value for c in at.caption)
    assert findings.capacity_caption(CAPACITY, grids, whole) in captions
    for record, grid in zip(findings.capacity_records(), grids, strict=True):  # each part: its points, its device
        if record.exists():
            part = sweep.read_results(record)
            assert f"{len(part)} points of the {grids[grid]} in {grid}" in captions
            assert f"device {part[0]['result']['device']}" in captions
    n, at_n = findings.capacity_rows(CAPACITY_SUMMARIES)
    fig = figure(at, f"MQAR, {n} pairs: accuracy against the numbers one layer carries")
    recorded = [t for t in fig["data"] if t["name"].endswith("(recorded)")]
    assert sorted(float(v) for t in recorded for v in t["customdata"]) == sorted(x.state_size() for x in at_n)
    if said := findings.capacity_sentence(CAPACITY_SUMMARIES, mixer_title):
        assert said in shown


def test_the_tour_line_into_the_page_and_the_home_pointer_say_what_the_capacity_record_shows(monkeypatch):
    """Both are the capacity record's headline, computed (empty, and the pointer left out, while it says nothing)."""
    from ui import nav

    entry = next(p for p in PAGES if p.url_path == "learned_memory")
    said = findings.capacity_pointer()
    assert said == findings.pointer_sentence(CAPACITY, mixer_title)
    assert nav.transition(entry) == " ".join(x for x in (nav._TRANSITIONS["learned_memory"], said) if x)
    monkeypatch.setattr(findings, "capacity_pointer", lambda: "Softmax held 16 pairs.")
    assert nav.transition(entry).endswith("learn them. Softmax held 16 pairs.")
    home = run_page("home", seed=0)
    assert not home.exception
    assert any(m.value == "**Trained, not set by hand.** Softmax held 16 pairs." for m in home.markdown)
    monkeypatch.setattr(findings, "capacity_pointer", lambda: "")
    home = run_page("home", seed=0)
    assert not any(m.value.startswith("**Trained, not set by hand.**") for m in home.markdown)
