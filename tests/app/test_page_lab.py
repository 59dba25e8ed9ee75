"""Memory lab page: runs at defaults and with changed controls, shows lineage.lab's numbers, and its sentences
follow the outcome (settings that flip a result flip the sentence)."""

from __future__ import annotations

import pytest

from lineage import lab
from lineage.plots.vocabulary import figure_problems
from tests.app.util import figures, run_page
from ui.nav import PAGES

PREFIX = "**What this shows.** "
EXPERIMENTS = ("overwrite", "capacity", "topic switch", "retention", "needle")


def sentences(at) -> dict[str, str]:
    """The five computed sentences, by experiment, in page order."""
    texts = [i.value.removeprefix(PREFIX) for i in at.info if i.value.startswith(PREFIX)]
    assert len(texts) == len(EXPERIMENTS), texts
    return dict(zip(EXPERIMENTS, texts, strict=True))


@pytest.fixture(scope="module")
def page():
    return run_page("memory_lab", seed=0)


def test_page_is_registered_under_labs():
    entry = next(p for p in PAGES if p.url_path == "memory_lab")
    assert (entry.section, entry.file, entry.title) == ("Labs", "app_pages/memory_lab.py", "Memory lab")


def test_page_runs_at_defaults(page):
    assert not page.exception and not page.error
    assert [t.value for t in page.title] == ["Memory lab"]
    assert len(figures(page)) == 6  # overwrite ×2, capacity, topic switch, retention, needle
    assert len(page.dataframe) == 6  # the overview + one table per experiment


def test_overview_table_is_the_comparison_of_the_runs_below(page):
    table = page.dataframe[0].value
    assert list(table.index) == [lab.label(m) for m in lab.DEFAULT_MECHANISMS]
    expected = lab.comparison_table(lab.run_all(lab.LabSettings(seed=0)))
    assert table.loc["DeltaNet", "overwrite: error vs v2"] == pytest.approx(
        expected.loc["DeltaNet", "overwrite: error vs v2"], abs=1e-12
    )
    assert table.loc["KDA", "needle: error at the end"] == pytest.approx(
        expected.loc["KDA", "needle: error at the end"], abs=1e-12
    )


def test_sentences_are_lineage_lab_summaries_at_defaults(page):
    # the page's default controls are the lab's defaults, so its sentences are lab.summary of the default runs
    s = lab.LabSettings(seed=0)
    expected = [lab.overwrite(s), lab.capacity(s), lab.topic_switch(s), lab.retention(s), lab.needle(s)]
    assert list(sentences(page).values()) == [lab.summary(r) for r in expected]
    assert sentences(page)["overwrite"].startswith(
        "DeltaNet, Gated DeltaNet, KDA, Gated DeltaNet-2 and Hybrid (KDA + softmax) recovered"
    )


def test_capacity_chart_marks_d_k_and_plots_every_mechanism(page):
    fig = figures(page)[2]
    names = {t["name"].split(" (same line as ")[0] for t in fig["data"]}  # lines that coincide name each other
    assert names == {lab.label(m) for m in lab.DEFAULT_MECHANISMS}
    assert not figure_problems(fig)
    assert any(shape.get("x0") == 16 for shape in fig["layout"]["shapes"])


@pytest.mark.parametrize(
    "controls, experiment, before, after",
    [
        ({"lab_overwrite_beta": 0.5}, "overwrite", "DeltaNet, Gated DeltaNet", "No mechanism recovered v2"),
        ({"lab_topic_reset": 1.0}, "topic switch", "After the switch", "No mechanism forgot topic A"),
        (
            {"lab_retention_alpha_slow": 0.9},
            "retention",
            "KDA kept the long-lived facts",
            "KDA and Gated DeltaNet kept the long-lived facts equally well",
        ),
        (
            {"lab_needle_fill": 15, "lab_needle_alpha": 1.0},
            "needle",
            "pure KDA has lost the needle",
            "pure KDA still holds the needle",
        ),
    ],
    ids=["overwrite-beta", "topic-no-reset", "retention-equal-channels", "needle-below-capacity"],
)
def test_sentence_flips_with_the_outcome(page, controls, experiment, before, after):
    assert before in sentences(page)[experiment]
    flipped = sentences(run_page("memory_lab", seed=0, **controls))[experiment]
    assert after in flipped and before not in flipped


def test_page_runs_with_changed_controls():
    at = run_page(
        "memory_lab",
        seed=7,
        lab_d_k=8,
        lab_keys="random",
        lab_noise=0.3,
        lab_elu1=True,
        lab_capacity_n=30,
        lab_capacity_trials=1,
        lab_topic_n_a=5,
        lab_topic_n_b=12,
    )
    assert not at.error
    assert len(figures(at)) == 6
    names = {t["name"] for t in figures(at)[2]["data"]}
    assert lab.label("linear_attention_elu1") in names
    assert lab.label("linear_attention_elu1") in at.dataframe[0].value.index
    assert "d_k = 8" in figures(at)[2]["layout"]["title"]["text"]


def test_impossible_gate_rule_is_a_message_not_a_traceback():
    at = run_page("memory_lab", seed=0, lab_retention_alpha=0.95, lab_retention_alpha_slow=0.9)
    assert [e.value for e in at.error] == [
        "Can't run this: alpha_slow must be >= alpha (slow channels forget less than average), got alpha_slow=0.9 "
        "< alpha=0.95"
    ]
    assert len(figures(at)) == 5  # the other experiments still ran
    assert any("overview needs all five" in w.value for w in at.warning)


def test_the_lab_names_who_runs_from_its_own_list_and_says_gdn2_reads_as_kda_here():
    """The stream's participants come from lineage.lab.participants (GLA and Gated DeltaNet-2 included), and the
    expander says why Gated DeltaNet-2's lines lie on KDA's (one β sets both its gates)."""
    at = run_page("memory_lab")
    text = " ".join(m.value for m in at.markdown)
    labels = [p.label for key, p in lab.participants().items() if key not in (lab.ELU1, lab.HYBRID)]
    assert ", ".join(labels) + " and a small hybrid" in text and "GLA" in labels and "Gated DeltaNet-2" in labels
    assert "lie on KDA's here" in text
