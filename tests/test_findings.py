"""The Learned memory findings: best learning rate over seeds, budget and one-seed caveats, and sentences that follow
the numbers (flip the numbers and the verdict flips)."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from lineage.models.lm import LMConfig
from lineage.train import findings
from lineage.train.loop import TrainConfig
from lineage.train.tasks import TaskConfig


def fake(
    mixer, acc, *, pairs=4, lr=1e-3, seed=0, steps=None, front_end="conv", width=64, max_steps=500, stopped=None,
    curve=None, patience=0, T=32,
):  # fmt: skip
    """A TrainResult dict as the sweep stores it, with the outcome given (and its held-out curve, if given)."""
    task = TaskConfig("mqar", 64, T, pairs)
    model = LMConfig(mixer=mixer, vocab_size=64, max_len=T, d_model=width, n_heads=4, front_end=front_end)
    solved = acc >= 0.99
    return dict(
        task=task.to_dict(),
        model=model.to_dict(),
        train=asdict(TrainConfig(lr=lr, max_steps=max_steps, patience=patience)),
        seed=seed,
        accuracy=acc,
        steps=steps if steps is not None else (200 if solved else max_steps),
        stopped=stopped or ("target" if solved else "max_steps"),
        carried=model.carried(),
        eval_accuracy=list(curve or []),
    )


RISING = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.88]  # a rise of 3 points in its last evaluation
FLAT = [0.1, 0.3] + [0.4] * 12  # no rise over its last 10 (the capacity grid's patience)


def capacity(**accs):
    """A capacity record: mechanism -> (accuracy at 4, 8 and 16 pairs), two seeds alike, each a plateau stop below
    the target."""
    return [
        fake(m, a, pairs=n, seed=s, T=64, patience=10, stopped=None if a >= 0.99 else "plateau", curve=FLAT)
        for m, row in accs.items()
        for n, a in zip((4, 8, 16), row, strict=True)
        for s in (0, 1)
    ]


def title(mixer: str) -> str:
    return mixer


def test_each_setting_is_reported_at_the_learning_rate_with_the_best_mean_over_seeds():
    runs = [
        fake("softmax", 0.99, lr=1e-3, seed=0), fake("softmax", 0.30, lr=1e-3, seed=1),  # mean 0.645
        fake("softmax", 0.70, lr=3e-3, seed=0), fake("softmax", 0.70, lr=3e-3, seed=1),  # mean 0.70: best
    ]  # fmt: skip
    (s,) = findings.summarise(runs)
    assert s.lr == 3e-3 and s.lrs == (1e-3, 3e-3) and s.accuracies == (0.70, 0.70) and s.seeds == (0, 1)
    assert s.budget and not s.solved
    assert "best of lr 0.001, 0.003: 0.003" in s.evidence() and "2 of 2 seeds hit the 500-step budget" in s.evidence()


def test_equal_accuracy_goes_to_the_learning_rate_that_needed_fewer_steps():
    runs = [fake("kda", 0.995, lr=1e-3, steps=400), fake("kda", 0.995, lr=3e-3, steps=150)]
    (s,) = findings.summarise(runs)
    assert s.lr == 3e-3 and s.steps == (150,)
    assert "one seed" in s.evidence()


def test_spread_is_the_lowest_and_highest_seed():
    (s,) = findings.summarise([fake("gla", a, seed=i) for i, a in enumerate([0.5, 0.9, 0.7])])
    assert (s.low, s.mean, s.high) == (0.5, pytest.approx(0.7), 0.9)
    assert "70.0% (seeds 50.0%–90.0%)" in s.evidence()


def test_one_learning_rate_is_named_as_such_not_as_the_best_of_one():
    (x,) = findings.summarise([fake("kda", 0.5, lr=3e-3)])
    assert "; lr 0.003, 500 steps" in x.evidence() and "best of" not in x.evidence()


def test_a_budget_point_is_still_rising_only_when_its_last_evaluations_rose():
    rising = fake("deltanet", 0.88, curve=RISING)
    flat = fake("deltanet", 0.4, curve=FLAT)
    assert findings.was_rising(rising) and not findings.was_rising(flat)
    assert not findings.was_rising(fake("deltanet", 0.995, curve=RISING)), "a point at its target is not a bound"
    assert not findings.was_rising(fake("deltanet", 0.4, stopped="plateau", curve=RISING[:5]))
    assert not findings.was_rising(fake("deltanet", 0.4)), "no stored curve: not judged"
    x = findings.summarise([rising, fake("deltanet", 0.4, seed=1, curve=FLAT)])[0]
    assert x.rising == (True, False) and x.still_rising and "1 of them still rising" in x.evidence()


def test_who_falls_where_follows_the_numbers():
    s = findings.summarise(
        capacity(softmax=(1.0, 1.0, 0.995), deltanet=(1.0, 0.95, 0.3), linear_attention=(0.6, 0.2, 0.1))
    )
    said = findings.falls_sentences(s, title)
    assert said[0].startswith("**softmax** holds every recorded size, up to 16 pairs: 99.5% (all 2 seeds)")
    assert said[1].startswith("**deltanet** holds 8 pairs (95%) and falls at 16: 30.0% (all 2 seeds)")
    assert "2 of 2 seeds stopped rising short of the target" in said[1]
    assert said[2].startswith("**linear_attention** holds none of the recorded sizes; at 4 pairs: 60.0%")
    moved = findings.falls_sentences(findings.summarise(capacity(deltanet=(1.0, 0.5, 0.3))), title)
    assert moved[0].startswith("**deltanet** holds 4 pairs (100%) and falls at 8"), "the fall moves with the numbers"


def test_what_each_step_buys_is_the_largest_gap_at_a_shared_size_and_flips_with_the_numbers():
    s = findings.summarise(
        capacity(linear_attention=(0.9, 0.2, 0.1), deltanet=(1.0, 0.9, 0.3), gated_deltanet=(1.0, 0.9, 0.31))
    )
    said = findings.step_sentences(s, title)
    assert said[0].startswith("The delta rule (deltanet over linear_attention) buys 70 points at 8 pairs:")
    assert said[1].startswith("A scalar gate on the delta rule (gated_deltanet over deltanet) buys nothing measurable")
    worse = findings.step_sentences(
        findings.summarise(capacity(linear_attention=(1, 1, 0.9), deltanet=(1, 1, 0.5))), title
    )
    assert worse[0].startswith("The delta rule (deltanet over linear_attention) costs 40 points at 16 pairs")


def seeded(**accs):
    """A capacity record with each seed's accuracy given: mechanism -> ((seed 0, seed 1) at 4, 8 and 16 pairs)."""
    return [
        fake(m, a, pairs=n, seed=s, T=64, patience=10, stopped=None if a >= 0.99 else "plateau", curve=FLAT)
        for m, row in accs.items()
        for n, seeds in zip((4, 8, 16), row, strict=True)
        for s, a in enumerate(seeds)
    ]


def test_a_step_is_not_credited_with_a_gap_its_seeds_do_not_separate():
    """Gated DeltaNet 3% and 99% on its two seeds against DeltaNet's 97% and 99%: the means differ by 47 points, but
    one seed of each reached the same place, so the record does not tell them apart there."""
    overlap = findings.step_sentences(
        findings.summarise(
            seeded(deltanet=((1, 1), (1, 1), (0.97, 0.99)), gated_deltanet=((1, 1), (1, 1), (0.03, 0.99)))
        ),
        title,
    )[0]
    assert overlap.startswith(
        "A scalar gate on the delta rule (gated_deltanet over deltanet) buys nothing this record can separate (47 "
        "points down on the mean at 16 pairs, the seeds overlapping at every recorded size):"
    )
    assert " costs " not in overlap and " buys 47" not in overlap
    # where one size separates the seeds, that size is the one reported, not the larger overlapping gap
    apart = findings.step_sentences(
        findings.summarise(
            seeded(linear_attention=((1, 1), (0.5, 0.6), (0.1, 0.97)), deltanet=((1, 1), (0.9, 0.96), (0.95, 0.99)))
        ),
        title,
    )[0]
    assert apart.startswith("The delta rule (deltanet over linear_attention) buys 38 points at 8 pairs:"), apart


def test_the_capacity_headline_says_the_cache_holds_while_the_states_fall_and_not_when_the_cache_fails_too():
    s = findings.summarise(capacity(softmax=(1, 1, 0.995), deltanet=(1, 0.9, 0.4), kda=(1, 0.95, 0.6)))
    point = findings.capacity_headline(s, title)
    assert point.claim.startswith("At the same width, softmax's cache holds all 16 pairs (100% in 200 steps) while")
    assert "kda 60% in 500 steps, deltanet 40% in 500 steps" in point.claim
    assert "16 pairs in 64 tokens, width 64" in point.claim
    slow = findings.capacity_headline(findings.summarise(capacity(softmax=(1, 1, 1), deltanet=(1, 1, 0.995))), title)
    assert slow.claim.startswith("At 16 pairs the best fixed state keeps up with softmax's cache, given the steps")
    assert point.shown == "100% → 60% → 40%"
    both = findings.capacity_headline(findings.summarise(capacity(softmax=(1, 1, 0.5), deltanet=(1, 0.9, 0.4))), title)
    assert "even softmax's cache, which keeps every pair, reached only 50%" in both.claim
    assert findings.capacity_headline(findings.summarise(capacity(deltanet=(1, 1, 1))), title) is None


def test_the_pointer_for_the_tour_and_home_is_the_capacity_headline_and_empty_without_one():
    lines = [{"result": r} for r in capacity(softmax=(1, 1, 1), deltanet=(1, 0.9, 0.4))]
    assert (
        findings.pointer_sentence(lines, title)
        == findings.capacity_headline(findings.summarise(r["result"] for r in lines), title).claim
    )
    assert findings.pointer_sentence([], title) == ""


def narrow(mixer: str, acc: float) -> list[dict]:
    """Two seeds of ``mixer`` at width 32 (the capacity record's 16 pairs in 64 tokens), both reaching ``acc``."""
    return [fake(mixer, acc, pairs=16, seed=s, T=64, width=32, patience=10, curve=FLAT) for s in (0, 1)]


def test_a_state_that_falls_when_narrowed_while_the_cache_holds_is_the_headline_and_not_when_the_cache_falls_too():
    wide = capacity(softmax=(1, 1, 1), deltanet=(1, 1, 0.995))
    point = findings.capacity_headline(
        findings.summarise(wide + narrow("softmax", 0.995) + narrow("deltanet", 0.2)), title
    )
    assert point.claim.startswith("Shrink the state and it runs out of room: at 16 pairs in 64 tokens, deltanet holds")
    carries = {w: LMConfig("deltanet", vocab_size=64, max_len=64, d_model=w, n_heads=4).carried() for w in (64, 32)}
    n = {w: c["state"] + c["normaliser"] + c["conv"] for w, c in carries.items()}  # what the chart's x axis counts
    assert n[32] < n[64] and carries[32]["per_token"] == 0
    said = f"when a layer carries {n[64]:,} numbers (100%, width 64) and falls with {n[32]:,} (20%, width 32)"
    assert said in point.claim
    assert (point.label, point.shown) == ("deltanet, 16 pairs: width 64 → 32", "100% → 20%")
    both = findings.summarise(wide + narrow("softmax", 0.3) + narrow("deltanet", 0.2))
    assert findings.ran_out_of_room(both) == [], "the narrow model failed as a whole: not the state's room"
    assert not findings.capacity_headline(both, title).claim.startswith("Shrink the state")


def test_a_headline_over_points_with_different_seed_counts_names_those_that_rest_on_one():
    wide = capacity(softmax=(1, 1, 1), deltanet=(1, 1, 0.995))  # two seeds each
    narrow = [
        fake(m, a, pairs=16, seed=0, T=64, width=32, patience=10, curve=FLAT)
        for m, a in (("softmax", 1), ("deltanet", 0.2))
    ]
    point = findings.capacity_headline(findings.summarise(wide + narrow), title)
    assert point.claim.startswith("Shrink the state")
    assert "one seed only: deltanet at 16 pairs and width 32, softmax at 16 pairs and width 32." in point.claim
    assert "width 64" not in point.claim.split("one seed only")[1], "the wide point has two seeds"


def test_the_headline_says_which_of_its_points_were_still_rising_at_their_budget():
    lines = capacity(softmax=(1, 1, 1)) + [
        fake("kda", 0.6, pairs=n, seed=s, T=64, patience=10, curve=RISING) for n in (4, 8, 16) for s in (0, 1)
    ]
    point = findings.capacity_headline(findings.summarise(lines), str.upper)
    assert "still rising when the budget ran out: KDA at 16 pairs, so those are lower bounds" in point.claim
    assert "at 4 pairs" not in point.claim, "only the points the claim rests on"
    assert "rests on one seed" not in point.claim, "two seeds each"


def test_zoology_s_picture_is_drawn_at_the_most_pairs_every_mechanism_has_with_each_state_size():
    s = findings.summarise(capacity(softmax=(1, 1, 1), deltanet=(1, 0.9, 0.4)))
    n, rows = findings.capacity_rows(s)
    assert n == 16 and {x.setting.mixer for x in rows} == {"softmax", "deltanet"}
    sizes = {x.setting.mixer: x.state_size() for x in rows}
    assert sizes["softmax"] > sizes["deltanet"], "the cache at 64 tokens holds more numbers than the fixed state"
    lines = findings.rising_lines(
        findings.summarise([fake("kda", 0.5, curve=RISING), fake("kda", 1.0, pairs=2)]), lambda x: x.setting.n_pairs
    )
    assert lines == {"kda": [False, True]}, "one flag per point, in x order"


def test_the_ledger_sentence_reads_the_capacity_record_first_and_the_first_record_without_it():
    cap = [{"result": r} for r in capacity(gated_deltanet=(1, 0.8, 0.3), kda=(1, 0.9, 0.5))]
    said = findings.ledger_sentence(cap, [], title)
    assert said.startswith(" Small trained models, on the Learned memory page (MQAR, its capacity record): Per-channel")
    assert "buys 20 points at 16 pairs" in said
    first = [{"result": fake("softmax", 1.0)}, {"result": fake("kda", 0.5)}]
    assert "its recorded sweep): At 4 pairs" in findings.ledger_sentence([], first, title)
    assert findings.ledger_sentence([], [], title) == ""


def test_the_capacity_caption_counts_the_points_names_the_rule_and_the_cluster_grid():
    grid, record = findings.CAPACITY_GRID.name, findings.CAPACITY_RECORD.name
    run = dict(
        command=f"python -m lineage sweep data/{grid} --out data/{record} --workers 1",
        runner="local pool of 1",
        started="2026-12-02T15:10:00+00:00",
        machine="x86_64, Linux",
        cpu_count=2,
        load_average=[4.0, 3, 2],
    )
    lines = [
        {"run": run, "result": {**r, "threads": 1, "device": "cpu", "torch_version": "2.x"}}
        for r in capacity(deltanet=(1, 1, 0.5))
    ]
    sizes = {f"data/{grid}": 30}
    said = findings.capacity_caption(lines, sizes, 3768)
    assert said.startswith(f"6 points of the 30 in data/{grid}, recorded on x86_64, Linux (2 cores, local pool of 1")
    assert "load average 4.0 when it started: other work shared the machine), device cpu, torch 2.x" in said
    assert "The other 24 points of that grid were not run" in said and f"`python -m lineage sweep data/{grid}" in said
    assert "none of its last 10 evaluations (every 25 steps) is 1 point above the best before them" in said
    assert "(data/learned_memory_grid.json, 3,768 points in all) adds more seeds" in said
    # a later session, run from another directory with two workers: the same command from the root, both pools named
    later = {**run, "started": "2026-12-03T10:00:00+00:00", "runner": "local pool of 2"}
    later["command"] = f"python -m lineage sweep /srv/x/data/{grid} --out /srv/x/data/{record} --workers 2"
    said = findings.capacity_caption([*lines, {**lines[0], "run": later}], sizes, 3768)
    assert "7 points of the 30" in said and "in 2 sessions from 2026-12-02" in said
    assert "(2 cores, local pool of 1 and local pool of 2," in said
    assert f"`python -m lineage sweep data/{grid} --out data/{record} --workers 2`" in said and "/srv/x" not in said
    # a GPU's part, from its own grid: a sentence of its own, its device named, its quiet machine not called shared
    gpu_grid = findings.CAPACITY_GPU_GRID.name
    gpu_run = {
        **run,
        "command": f"python -m lineage sweep data/{gpu_grid} --out g.jsonl --device cuda",
        "cpu_count": 16,
    }
    gpu_run["load_average"] = [0.9, 1, 1]
    gpu = [{**line, "run": gpu_run, "result": {**line["result"], "device": "cuda: H200"}} for line in lines[:2]]
    said = findings.capacity_caption([*lines, *gpu], {**sizes, f"data/{gpu_grid}": 2}, 3768)
    cpu_part, gpu_part = said.split(f"2 points of the 2 in data/{gpu_grid}")
    assert cpu_part.startswith("6 points of the 30") and "cuda" not in cpu_part
    assert gpu_part.startswith(", recorded on x86_64, Linux (16 cores") and "device cuda: H200" in gpu_part
    assert "load average 0.9 when it started), device" in gpu_part and "other work" not in gpu_part
    assert "The other" not in gpu_part.split("Each point")[0]  # every point of its grid is there
    # a grid file this copy lacks: its part counts the points it has
    assert "6 points of the 6 in" in findings.capacity_caption(lines, {}, 3768)


def test_the_zoology_check_follows_the_numbers():
    solved = [fake("softmax", 0.995, pairs=n, seed=s) for n in (4, 8) for s in (0, 1)]
    line = findings.paper_checks(findings.summarise(solved), title)[0]
    assert line.startswith("Zoology (Arora et al. 2023, arXiv 2312.04927)") and "this record agrees" in line
    failed = solved[:3] + [fake("softmax", 0.4, pairs=8, seed=1)]
    line = findings.paper_checks(findings.summarise(failed), title)[0]
    assert "this record **disagrees** (some of these points hit the budget)" in line


def test_the_deltanet_check_flips_when_linear_attention_wins():
    win = [fake("deltanet", 0.99), fake("linear_attention", 0.6)]
    assert "agrees" in findings.paper_checks(findings.summarise(win), title)[0]
    lose = [fake("deltanet", 0.6), fake("linear_attention", 0.99)]
    line = findings.paper_checks(findings.summarise(lose), title)[0]
    assert (
        line.startswith("DeltaNet (Yang et al. 2024, arXiv 2406.06484)") and "**disagrees** (rests on one seed" in line
    )


def test_the_kimi_check_names_the_report_section_and_compares_kda_with_gated_deltanet():
    runs = [fake("kda", 0.99, steps=150), fake("gated_deltanet", 0.99, steps=300)]
    (line,) = findings.paper_checks(findings.summarise(runs), title)
    assert "Kimi Linear report (arXiv 2510.26692, §5.1, Figure 4b)" in line
    assert "KDA 99% in 150 steps, Gated DeltaNet 99% in 300" in line and "agrees" in line
    runs = [fake("kda", 0.5), fake("gated_deltanet", 0.99)]
    assert "**disagrees**" in findings.paper_checks(findings.summarise(runs), title)[0]


def test_the_ablation_sentence_sets_each_mechanism_with_and_without_the_convolution():
    runs = [fake("softmax", 0.995, seed=s) for s in (0, 1)] + [
        fake("softmax", 0.27, seed=s, front_end="none") for s in (0, 1)
    ]
    (line,) = findings.front_end_sentences(findings.summarise(runs), title)
    assert line.startswith("**softmax − conv** at 4 pairs: 27.0% (all 2 seeds)") and "on the 1/4 plateau" in line
    assert "with the convolution: 99.5% (all 2 seeds)" in line
    assert "softmax − conv at 4 pairs (27%)" in findings.plateau_sentence(findings.summarise(runs), title)


def test_who_learned_most_is_computed_at_the_hardest_shared_size_and_ties_are_said():
    runs = [fake("softmax", 0.99, pairs=8), fake("deltanet", 0.6, pairs=8), fake("deltanet", 0.99, pairs=4)]
    said = findings.most_learned(findings.summarise(runs), title)
    assert said.startswith("At 8 pairs") and "softmax learned most" in said
    assert findings.most_learned(findings.summarise(runs[:1]), title) == "", "one mechanism: nobody to beat"
    tie = [fake("softmax", 0.995, pairs=8, steps=300), fake("deltanet", 0.99, pairs=8, steps=100)]
    said = findings.most_learned(findings.summarise(tie), title)
    assert "are within 2% of each other" in said and "deltanet got there in the fewest steps" in said


def test_the_capacity_axis_appears_once_a_size_is_recorded_at_two_widths():
    narrow = [fake("deltanet", 0.4, pairs=8, width=16), fake("deltanet", 0.99, pairs=8, width=64)]
    summaries = findings.summarise(narrow)
    assert findings.capacity_pairs(summaries) == 8
    said = findings.capacity_sentence(summaries, title)
    small, large = (LMConfig(mixer="deltanet", d_model=w, n_heads=4).carried() for w in (16, 64))
    assert f"40% at width 16 ({sum(small.values()):,} numbers)" in said
    assert f"99% at width 64 ({sum(large.values()):,} numbers)" in said
    assert findings.capacity_pairs(findings.summarise(narrow[1:])) is None


def test_the_memory_caption_counts_state_normaliser_convolution_and_kv_cache():
    runs = [fake("linear_attention", 0.5), fake("softmax", 0.99)]
    caption = findings.memory_caption(findings.summarise(runs), title)
    la = LMConfig(mixer="linear_attention", d_model=64, n_heads=4).carried()
    sm = LMConfig(mixer="softmax", d_model=64, n_heads=4).carried()
    assert (
        f"linear_attention {la['state']:,} of state + {la['normaliser']:,} of normaliser + {la['conv']:,} of "
        in caption
    )
    assert f"softmax a cache of {sm['per_token']:,} per token ({sm['per_token'] * 32:,} at 32 tokens)" in caption
    assert la["normaliser"] == 4 * 16 and la["conv"] == 3 * 3 * 64


def test_the_live_plateau_check_finds_runs_near_one_over_pairs():
    class R:
        def __init__(self, mixer, acc, solved):
            self.mixer, self.accuracy, self.solved = mixer, acc, solved

    runs = [R("softmax", 0.26, False), R("deltanet", 0.99, True), R("gla", 0.6, False)]
    assert [r.mixer for r in findings.on_plateau(runs, 4)] == ["softmax"]


def test_the_solved_sentence_lists_where_every_seed_reached_the_target_and_the_evidence_elsewhere():
    runs = [fake("deltanet", 0.995, pairs=4, seed=s) for s in (0, 1)] + [
        fake("deltanet", 0.995, pairs=8, seed=0),
        fake("deltanet", 0.705, pairs=8, seed=1),
    ]
    (line,) = findings.solved_sentences(findings.summarise(runs), title)
    assert line.startswith("**deltanet** reached the target on every seed at 4 pairs — 4 pairs: 99.5% (all 2 seeds)")
    assert "8 pairs: 85.0% (seeds 70.5%–99.5%)" in line and "1 of 2 seeds hit the 500-step budget" in line
    (line,) = findings.solved_sentences(findings.summarise(runs[2:]), title)
    assert line.startswith("**deltanet** did not reach the target on every seed at any recorded size")


def test_the_headline_is_the_largest_front_end_drop_with_its_numbers():
    runs = [
        fake("softmax", 0.995), fake("softmax", 0.28, front_end="none"),
        fake("deltanet", 0.99), fake("deltanet", 0.60, front_end="none"),
        fake("linear_attention", 0.80),
    ]  # fmt: skip
    h = findings.headline(findings.summarise(runs), title)
    assert h.label == "softmax with → without the convolution" and h.shown == "99.5% → 28.0%"
    assert "softmax 99.5% and deltanet 99.0%" in h.claim and "softmax 28.0% and deltanet 60.0%" in h.claim
    assert "1/4" in h.claim and "linear_attention" not in h.claim  # no ablation for it: not named


def test_without_an_ablation_the_headline_names_who_learned_most_and_none_for_an_empty_record():
    h = findings.headline(findings.summarise([fake("kda", 0.9), fake("gla", 0.5)]), title)
    assert h.shown == "90%" and "kda learned most" in h.claim
    assert findings.headline([], title) is None


def test_an_ablation_that_changes_nothing_is_not_called_a_drop():
    runs = [fake("softmax", 0.99), fake("softmax", 0.985, front_end="none")]
    h = findings.headline(findings.summarise(runs), title)
    assert h.shown == "99.0% → 98.5%" and "without it, softmax" not in h.claim


def test_a_drop_the_cache_shares_is_not_called_running_out_of_room():
    """At a width where softmax (whose cache holds every pair) also fails, the sentence says the narrow model did not
    learn, rather than letting a fixed state's drop read as capacity; where softmax solves it, nothing is added."""
    runs = [
        fake("deltanet", 0.05, pairs=8, width=16),
        fake("deltanet", 0.99, pairs=8, width=64),
        fake("softmax", 0.13, pairs=8, width=16),
        fake("softmax", 0.995, pairs=8, width=64),
    ]
    said = findings.capacity_sentence(findings.summarise(runs), title)
    assert "At width 16 softmax fails too (13%)" in said and "do not show them running out of room" in said
    runs[2] = fake("softmax", 0.995, pairs=8, width=16)
    assert "fails too" not in findings.capacity_sentence(findings.summarise(runs), title)


# ---- the Learned memory page's sentences, computed here rather than in the page ------------------------------------


def test_sweep_lines_give_each_mechanism_and_front_end_its_own_line_in_x_order():
    runs = [fake("deltanet", 0.9, pairs=8), fake("deltanet", 0.99, pairs=4), fake("deltanet", 0.3, front_end="none")]
    points, spread, names = findings.sweep_lines(
        findings.summarise(runs), lambda x: x.setting.n_pairs, lambda m: m.upper()
    )
    assert points == {"deltanet": ([4, 8], [0.99, 0.9]), "deltanet/none": ([4], [0.3])}
    assert spread["deltanet"] == ([0.99, 0.9], [0.99, 0.9])  # one seed: lowest = highest = the mean
    assert names["deltanet"].startswith("DELTANET") and names["deltanet/none"] != names["deltanet"]


def _record_line(result, started="2026-12-01T00:00:00", command="python -m lineage sweep g.json --out r.jsonl"):
    run = dict(started=started, command=command, machine="x86_64", cpu_count=2, runner="local pool of 1")
    return dict(run=run | dict(load_average=[3.14, 0, 0]), result=result | dict(threads=1, torch_version="2.13.0"))


def test_the_record_caption_counts_points_sessions_and_commands_from_the_record():
    lines = [_record_line(fake("kda", 0.9)), _record_line(fake("kda", 0.8, seed=1), started="2026-12-02T00:00:00")]
    said = findings.record_caption(lines, 1, cpu=64, whole=1000)
    assert said.startswith("2 recorded points (1 setting,") and "of the 64 in" in said and "1,000 points" in said
    assert "The other 62 were not run" in said and "Run in 2 sessions from 2026-12-01T00:00:00" in said
    assert "load average 3.1" in said and said.count("`python -m lineage sweep g.json --out r.jsonl`") == 1
    assert "were not run" not in findings.record_caption(lines, 1, cpu=2, whole=2)


def test_a_recorded_point_is_labelled_by_what_sets_it_apart():
    said = findings.point_label(fake("kda", 0.875, pairs=8, lr=3e-3, seed=1, width=16), title)
    assert said.endswith("8 pairs, width 16, lr 0.003, seed 1 (88%)") and said.startswith("kda")


class _Result:
    def __init__(self, mixer, accuracy, steps=100, solved=False):
        self.mixer, self.accuracy, self.steps, self.solved = mixer, accuracy, steps, solved
        self.wall_seconds, self.train = 1.5, {"target_accuracy": 0.99}


def test_the_live_sentence_names_who_learned_most_only_when_clear_of_chance():
    said = findings.live_sentence(
        {"kda": _Result("kda", 0.995, solved=True), "softmax": _Result("softmax", 0.4)}, 0.25, title
    )
    assert "kda: 99.5% after 100 steps (1.5 s, reached the 99% target)." in said and "kda learned most." in said
    said = findings.live_sentence({"kda": _Result("kda", 0.3)}, 0.25, title)
    assert "none is clear of chance yet" in said


def test_the_rerun_sentence_says_whether_the_losses_match_and_where_the_cap_cut_it():
    picked, again = _Result("kda", 0.99, steps=400), _Result("kda", 0.9, steps=200)
    said = findings.rerun_sentence(again, picked, 200, "cpu", 200, True)
    assert "(the first 200 of its 400 steps: the cap here)" in said and "all 200 steps match" in said
    assert "differ from the recorded ones" in findings.rerun_sentence(again, picked, 400, "cpu", 200, False)


def test_the_channel_gate_sentence_finds_the_slowest_and_fastest_channel():
    import numpy as np

    alpha = np.array([[0.5, 0.99, 0.1], [0.5, 0.97, 0.3]])
    assert findings.channel_gates_sentence(alpha).startswith(
        "Its gates are one per key channel: channel 1 keeps 0.98 of its row per token on average, channel 2 only 0.20"
    )


def test_a_press_over_the_caps_is_refused_with_every_reason():
    caps = type("Caps", (), dict(steps=300, seconds=60.0, mechanisms=3))
    assert findings.training_problems(300, 60.0, ["kda"], caps) == []
    said = findings.training_problems(301, 61.0, ["a", "b", "c", "d"], caps)
    assert said == [
        "301 steps asked for; the cap here is 300",
        "61 s per mechanism asked for; the cap here is 60 s",
        "4 mechanisms chosen; one press trains at most 3",
    ]
    assert findings.training_problems(1, 1.0, [], caps) == ["no mechanism chosen"]


def test_rising_points_of_a_claim_across_two_widths_are_named_with_their_width():
    """The narrowing headline rests on one mechanism at two widths: each rising point names its width, so the same
    mechanism and pairs are not listed twice as if they were one point."""

    def at(width, acc, curve):
        return [fake("deltanet", acc, pairs=16, seed=s, T=64, width=width, patience=10, curve=curve) for s in (0, 1)]

    wide = capacity(softmax=(1, 1, 1)) + at(64, 0.97, RISING)
    narrow = [fake("softmax", 0.995, pairs=16, seed=s, T=64, width=32, patience=10, curve=FLAT) for s in (0, 1)]
    point = findings.capacity_headline(findings.summarise(wide + narrow + at(32, 0.2, RISING)), str.upper)
    assert point.claim.startswith("Shrink the state")
    assert (
        "DELTANET at 16 pairs and width 64, DELTANET at 16 pairs and width 32, so those are lower bounds" in point.claim
    )


def test_each_part_of_the_capacity_record_is_paired_with_the_grid_whose_command_writes_it():
    """capacity_parts is the one list of the record's parts: each grid file's own description names its record, and
    the records and grids the rest of the app reads come from it, in its order."""
    parts = findings.capacity_parts()
    assert parts and len({record for record, _ in parts}) == len(parts) == len({grid for _, grid in parts})
    for record, grid in parts:
        if grid.exists():
            assert f"data/{record.name}" in json.loads(grid.read_text())["about"], (record, grid)
    assert findings.capacity_records() == tuple(record for record, _ in parts)
    assert findings.capacity_grids() == tuple(grid for _, grid in parts)


def test_a_title_inside_a_sentence_lowers_a_common_nouns_capital_and_keeps_a_names():
    lowered = {
        "Linear attention": "linear attention",
        "Softmax attention": "softmax attention",
        "No mixing (control)": "no mixing (control)",
    }
    kept = ["DeltaNet", "Mamba-2", "GLA", "KDA", "Gated DeltaNet", "Gated DeltaNet-2", "Hybrid (KDA + MLA)", "deltanet"]
    assert {n: findings.in_sentence(n) for n in lowered} == lowered
    assert [findings.in_sentence(n) for n in kept] == kept
    assert findings.in_sentence("") == ""


def test_the_capacity_headline_names_a_common_noun_in_lower_case_mid_sentence():
    from lineage.models.lm import mixer_title

    wide = capacity(softmax=(1, 1, 1), linear_attention=(1, 1, 0.995))
    point = findings.capacity_headline(
        findings.summarise(wide + narrow("softmax", 0.995) + narrow("linear_attention", 0.2)), mixer_title
    )
    assert "at 16 pairs in 64 tokens, linear attention holds them" in point.claim
    assert point.label.startswith("Linear attention, 16 pairs"), "a label starts with its capital"
