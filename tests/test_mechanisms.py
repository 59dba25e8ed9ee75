"""The one table of mechanisms: its entries are consistent, everything derives from it, and one more entry is enough
to add a mechanism (verify, the benchmark's plan, the stage table, the layers, the lab pick it up)."""

from __future__ import annotations

import ast
import dataclasses
import pathlib
import re

import pytest
import torch

from lineage import lab, mechanisms, schedules, stages
from lineage.inputs import draw_inputs, random_inputs
from lineage.measure import bench, footprints, verify
from lineage.mechanisms import MECHANISMS, LayerOptions, Mechanism, Narrative, linear_mechanisms, mechanism
from lineage.models import hybrid
from lineage.models.layers import LinearMemoryMixer, MixerConfig
from lineage.ops.gated_deltanet import gated_deltanet
from lineage.ops.recurrence import run_memory
from lineage.plots import lab as plots_lab
from lineage.plots import palette
from tests.util import assert_close, make_inputs

ROOT = pathlib.Path(__file__).resolve().parents[1]
KEYS = ("softmax", "mla", "linear_attention", "deltanet", "mamba2", "gla", "gated_deltanet", "kda", "gated_deltanet2")
ARTICLE = tuple(m.key for m in linear_mechanisms() if not m.after_article)  # the article's linear stages


def additive_fixed_decay(q, k, v, g, *, scale=None, initial_state=None, output_final_state=False, **kw):
    """A toy eighth mechanism: the additive write under a scalar gate, through the shared recurrence."""
    return run_memory(
        q,
        k,
        v,
        g,
        None,
        rule="additive",
        scale=scale,
        initial_state=initial_state,
        output_final_state=output_final_state,
        per_channel=False,
        **kw,
    )


TOY = Mechanism(
    key="toy_decay",
    title="Toy decaying memory",
    year=2026,
    paper="none: a test entry, arXiv 0000.00000",
    url="https://arxiv.org/abs/0000.00000",
    rule="additive",
    gate="scalar",
    colour="#123456",
    stage="toy_decay",
    layer=LayerOptions(gate_form="softplus"),
    narrative=Narrative(
        representative="a test",
        summary="Additive state with a scalar decay, no short convolution",
        problem_solved="Shows that one entry adds a mechanism",
        cost_introduced="None: it is not a stage of the lineage",
        transition="One more entry in the table.",
    ),
    op=additive_fixed_decay,
)


def test_the_table_holds_the_mechanisms_in_lineage_order():
    assert tuple(MECHANISMS) == KEYS
    assert [m.key for m in linear_mechanisms()] == list(KEYS[2:])
    assert KEYS[2:-1] == ARTICLE and mechanism("gated_deltanet2").after_article
    cells = [(mechanism(key).rule, mechanism(key).gate) for key in ARTICLE]
    assert sorted(cells) == sorted((r, g) for r in mechanisms.write_rules() for g in mechanisms.GATES), (
        "the article's linear family fills the write-rule × gate grid once"
    )
    assert (mechanism("gated_deltanet2").rule, mechanism("gated_deltanet2").gate) == ("delta", "channel"), "KDA's cell"
    with pytest.raises(ValueError, match="mechanism must be one of 'softmax'.*got 'linear'"):
        mechanism("linear")


def test_one_distinct_colour_per_mechanism():
    colours = mechanisms.colours()
    assert set(colours) == set(KEYS)
    assert all(re.fullmatch(r"#[0-9A-Fa-f]{6}", c) for c in colours.values())
    assert len({c.upper() for c in colours.values()}) == len(colours)


def test_every_entry_cites_an_arxiv_paper():
    for m in MECHANISMS.values():
        assert re.search(r"arXiv \d{4}\.\d{4,5}", m.paper), m.key
        assert m.url.startswith("https://arxiv.org/abs/"), m.key


@pytest.mark.parametrize("m", linear_mechanisms(), ids=lambda m: m.key)
def test_every_linear_op_is_reachable_and_is_the_recurrence_of_its_cell(m):
    gen = torch.Generator().manual_seed(0)
    B, H, T, K, V = 1, 2, 9, 4, 3
    q, k, v = (torch.randn(B, H, T, d, generator=gen, dtype=torch.float64) for d in (K, K, V))
    g = -torch.rand((B, H, T) if m.gate == "scalar" else (B, H, T, K), generator=gen, dtype=torch.float64)
    beta = torch.rand(B, H, T, generator=gen, dtype=torch.float64)
    o, _ = m.call(q, k, v, g, beta, mode="chunk", chunk_size=4, **m.bare)
    ref, _ = run_memory(
        q,
        k,
        v,
        None if m.gate == "none" else g,
        beta if m.rule == "delta" else None,
        rule=m.rule,
        mode="recurrent",
    )
    assert_close(o, ref, what=m.key)


def test_softmax_entries_have_no_write_rule_and_the_softmax_op_runs():
    assert [m.key for m in mechanisms.softmax_mechanisms()] == ["softmax", "mla"]
    q = torch.randn(1, 2, 5, 4)
    o, _ = mechanism("softmax").op(q, q, q)
    assert o.shape == q.shape
    with pytest.raises(ValueError, match="'softmax' is not a linear-memory mechanism"):
        mechanism("softmax").call(q, q, q)


@pytest.mark.parametrize("m", linear_mechanisms(), ids=lambda m: m.key)
def test_every_layer_is_built_from_its_entry(m):
    mixer = LinearMemoryMixer(m.key, MixerConfig(d_model=8, n_heads=2, head_k=4, head_v=4, gate_rank=2))
    names = {name for name, _ in mixer.named_parameters()}
    assert any(n.startswith("convs.") for n in names) == m.layer.conv
    assert ("b_proj.weight" in names) == m.takes("beta")
    assert {n for n in names if n.startswith("unit_projs.")} == {
        f"unit_projs.{u.name}.{p}" for u in m.unit_gates for p in ("weight", "bias")
    }
    assert ("og_up.weight" in names) == (m.layer.output_gate != "none")
    assert ("A_log" in names) == (m.layer.gate_form == "softplus")
    assert ("g_up.weight" in names) == (m.gate == "channel")
    x = torch.randn(2, 5, 8)
    y, state = mixer(x, use_cache=True)
    assert y.shape == x.shape
    extra = 1 if m.layer.normalize else 0  # normalised linear attention keeps z as one more state column
    assert state.S.shape == (2, 2, 4, 4 + extra)


def test_hybrid_builds_every_layer_kind_of_the_table():
    kinds = mechanisms.layer_kinds()
    assert kinds == ("mha", "mla", *KEYS[2:])
    stack = hybrid.HybridStack(hybrid.HybridConfig(schedule=kinds, d_model=16, n_heads=2, head_dim=8))
    y, caches = stack(torch.randn(1, 3, 16), use_cache=True)
    assert y.shape == (1, 3, 16) and len(caches) == len(kinds)


def test_hybrid_refuses_a_softmax_kind_it_has_no_layer_for():
    cache = dataclasses.replace(mechanism("mla"), key="toy_cache", colour="#123456", layer_kind="toy_cache")
    with mechanisms.registered(cache), pytest.raises(ValueError, match="'toy_cache', a softmax-family layer kind"):
        hybrid.HybridStack(hybrid.HybridConfig(schedule=("toy_cache",), d_model=16, n_heads=2, head_dim=8))


def test_footprint_kinds_come_from_the_table():
    assert tuple(m.key for m in linear_mechanisms()) == schedules.LINEAR_KINDS
    assert tuple(m.key for m in linear_mechanisms() if m.layer.conv) == footprints.CONV_KINDS
    assert footprints.NORMALIZER_KINDS == ("linear_attention",)
    assert set(schedules.LAYER_KINDS) == {*mechanisms.layer_kinds(), "gqa"}, "one list of kinds, plus GQA's layout"
    assert {m.layer_kind for m in mechanisms.softmax_mechanisms()} <= set(schedules.SOFTMAX_KINDS)


def test_a_layer_kind_maps_back_to_its_mechanism():
    for m in MECHANISMS.values():
        assert mechanisms.layer_mechanism(m.layer_kind) is m
    assert mechanisms.layer_mechanism("mha").key == "softmax"
    for not_a_layer in ("softmax", "gqa"):  # a mechanism's key that is not its kind; a layout no model builds
        with pytest.raises(ValueError, match=f"kind must be a layer kind, one of 'mha'.*got '{not_a_layer}'"):
            mechanisms.layer_mechanism(not_a_layer)


def test_a_stage_is_one_narrative_defined_once():
    narrative = {f.name for f in dataclasses.fields(mechanisms.Narrative)}
    stage_fields = [f.name for f in dataclasses.fields(stages.Stage)]
    assert narrative <= set(stage_fields) and len(stage_fields) == len(set(stage_fields))
    assert not narrative & {f.name for f in dataclasses.fields(Mechanism)}, "a mechanism holds its narrative whole"
    for m in MECHANISMS.values():
        if m.narrative is not None:
            s = stages.stage(m.key)
            assert mechanisms.Narrative(**{n: getattr(s, n) for n in narrative}) == m.narrative


def test_stage_table_rows_come_from_the_table():
    table = stages.all_stages()
    assert [s.key for s in table] == ["gpt2", "kv_cache", *ARTICLE, "hybrid", "gated_deltanet2"]
    assert [s.after_article for s in table] == [s.key == "gated_deltanet2" for s in table]
    assert stages.stage("gated_deltanet2").heading == "Gated DeltaNet-2 (after the article)"
    assert stages.stage("kda").heading == "KDA"
    for m in linear_mechanisms():
        s = stages.stage(m.key)
        assert (s.title, s.year, s.paper, s.rule, s.gate) == (m.title, m.year, m.paper, m.rule, m.gate)
        assert s.mechanisms == (m.key,) and s.layer_kinds == (m.layer_kind,)
    for m in MECHANISMS.values():
        assert m.stage in {s.key for s in table}, f"{m.key} belongs to a row of the stage table"
    assert {cell for cell, in_cell in stages.grid().items() if in_cell} == {
        (m.rule, m.gate) for m in linear_mechanisms()
    }


def test_lab_runs_every_linear_mechanism_of_the_table():
    assert set(lab.DEFAULT_MECHANISMS) == {"softmax", "hybrid", *(m.key for m in linear_mechanisms())}


def test_an_eighth_entry_appears_in_verify_bench_stages_layers_and_lab_with_no_other_change():
    with mechanisms.registered(TOY):
        checks = [c for c in verify.run_verify() if c.mechanism == TOY.key]
        assert {c.case for c in checks} == set(verify.CASES), "a gated mechanism is checked in every gate case"
        assert {c.mode for c in checks} == {
            "recurrent",
            "chunk C=16",
            "chunk C=7",
            "parallel",
            "minimal C=16",
            "minimal C=7",
        }
        assert all(c.ok for c in checks), [c for c in checks if not c.ok]
        plan = bench.sweep_plan(bench.BenchConfig(T=64, K=8, V=8))
        assert [d is None for m, d in plan if m.key == TOY.key] == [False] * len(bench.gate_draws(bench.BenchConfig()))
        toy_stage = stages.stage(TOY.key)
        order = [s.key for s in stages.all_stages()]
        assert order.index(TOY.key) == order.index("hybrid") - 1, "a stage of the article's kind: before the hybrid"
        # the toy shares Mamba-2's cell: the grid keeps both, and the home page's heading counts them
        assert [s.key for s in stages.grid()[("additive", "scalar")]] == ["mamba2", TOY.key]
        assert sum(map(len, stages.grid().values())) == len(linear_mechanisms())
        n = stages.count_words(len(linear_mechanisms()))  # with Gated DeltaNet-2 in KDA's cell: eight stages
        assert stages.grid_title(stages.grid()) == f"One recurrence, six cells, {n} stages"
        assert (toy_stage.title, toy_stage.rule, toy_stage.gate) == (TOY.title, "additive", "scalar")
        mixer = LinearMemoryMixer(TOY.key, MixerConfig(d_model=8, n_heads=2, head_k=4, head_v=4, gate_rank=2))
        x = torch.randn(1, 6, 8, dtype=torch.float64)
        mixer = mixer.double()
        full, _ = mixer(x)
        steps, cache = [], None
        for t in range(6):
            y, cache = mixer(x[:, t : t + 1], cache=cache, use_cache=True)
            steps.append(y)
        assert_close(torch.cat(steps, dim=1), full, what="toy layer decoded token by token")
        assert TOY.key in lab.participants()
        reads = lab.overwrite(mechanisms=(TOY.key, "mamba2"))
        assert reads.coef_v2[TOY.key] == pytest.approx(reads.coef_v2["mamba2"], abs=1e-12), "same rule, same gate"
    assert TOY.key not in MECHANISMS and TOY.key not in {s.key for s in stages.all_stages()}


def test_registered_refuses_a_clash_and_replace_restores_the_entry():
    clash = mechanisms.registered(dataclasses.replace(mechanism("kda"), colour="#000001"))
    with pytest.raises(ValueError, match="'kda' is already in the table"), clash:
        pass
    original = mechanism("kda")
    with mechanisms.registered(dataclasses.replace(original, colour="#000001"), replace=True):
        assert mechanism("kda").colour == "#000001"
    assert mechanism("kda") is original
    with pytest.raises(ValueError, match="replace=True needs"), mechanisms.registered(TOY, replace=True):
        pass


@pytest.mark.parametrize(
    "change, match",
    [
        ({"rule": "overwrite"}, "rule must be one of"),
        ({"gate": "vector"}, "gate must be one of"),
        ({"colour": "blue"}, "colour must be a hex colour"),
        ({"layer": None}, "needs layer options"),
        ({"layer": LayerOptions(gate_form="logsigmoid")}, "gate_form must be one of"),
        ({"stage": "mamba2"}, "own narrative exactly when"),
        ({"key": "toy-decay"}, "Python identifier"),
    ],
)
def test_a_malformed_entry_is_refused_with_a_message(change, match):
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(TOY, **change)


def _enumerations(tree: ast.AST, names: set[str]):
    """Literal tuples, lists, sets and dict keys naming three or more mechanisms: a re-listing of the table."""
    exports = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
        for inner in ast.walk(node.value)
    }
    for node in ast.walk(tree):
        if id(node) in exports:  # __all__ names functions, not mechanisms
            continue
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            elements = node.elts
        elif isinstance(node, ast.Dict):
            elements = [k for k in node.keys if k is not None]
        else:
            continue
        listed = {e.value for e in elements if isinstance(e, ast.Constant) and e.value in names}
        if len(listed) >= 3:
            yield node.lineno, sorted(listed)


# Modules that may key content by stage: lineage/teach/equations.py holds each stage page's own equation text and code
# markers, lineage/teach/units.py each stage's prose and claim recipe (presentation written per stage, like a page's
# prose; lineage.teach.equations.equation and lineage.teach.units.unit say which stages have one).
PER_STAGE_CONTENT = {"lineage/teach/equations.py", "lineage/teach/units.py"}


def test_no_module_lists_the_mechanisms_again_or_uses_the_old_name():
    names = set(MECHANISMS) | {"linear"}
    found = []
    for folder in ("lineage", "app_pages", "ui"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "lineage" / "mechanisms.py" or str(path.relative_to(ROOT)) in PER_STAGE_CONTENT:
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            found += [f"{path.relative_to(ROOT)}:{line} {listed}" for line, listed in _enumerations(tree, names)]
            found += [
                f"{path.relative_to(ROOT)}:{node.lineno} the old kind 'linear'"
                for node in ast.walk(tree)
                if isinstance(node, ast.Compare)
                and any(isinstance(c, ast.Constant) and c.value == "linear" for c in node.comparators)
            ]
    assert not found, "derive these from lineage.mechanisms:\n" + "\n".join(found)


def test_the_stray_name_scan_can_fail():
    tree = ast.parse('KINDS = ("deltanet", "gla", "kda")\nOK = ("deltanet", "x")\n__all__ = ["gla", "kda", "mla"]')
    assert list(_enumerations(tree, set(MECHANISMS))) == [(1, ["deltanet", "gla", "kda"])]


# ---- the op contract: which tensors an op takes, and their shapes --------------------------------------------------

SIZES = {"B": 2, "H": 3, "T": 9, "K": 4, "V": 5}


@pytest.mark.parametrize("m", linear_mechanisms(), ids=lambda m: m.key)
def test_the_op_contract_follows_the_gate_and_the_rule(m):
    names = [x.name for x in m.op_contract]
    convention = ["q", "k", "v"] + (["g"] if m.gate != "none" else []) + (["beta"] if m.write.takes_beta else [])
    if m.op_inputs:  # an entry that states its own: Gated DeltaNet-2's erase and write gates where β was
        assert names == ["q", "k", "v", "g", "erase", "write"] and [u.name for u in m.unit_gates] == names[4:]
        assert m.input_shape("erase", SIZES) == (2, 3, 9, 4) and m.input_shape("write", SIZES) == (2, 3, 9, 5)
        assert m.writes_with_strength and not m.takes("beta")
    else:
        assert names == convention and not m.unit_gates
    assert m.input_shape("v", SIZES) == (2, 3, 9, 5)
    if m.takes("g"):
        assert m.input_shape("g", SIZES) == ((2, 3, 9, 4) if m.gate == "channel" else (2, 3, 9))
    with pytest.raises(ValueError, match=f"{m.key}'s op takes q, k, v.*not 'w'"):
        m.input_shape("w", SIZES)


@pytest.mark.parametrize("m", linear_mechanisms(), ids=lambda m: m.key)
def test_draw_inputs_draws_what_the_contract_names_in_its_shapes(m):
    x = draw_inputs(m.op_contract, SIZES, torch.Generator().manual_seed(3))
    for name in ("q", "k", "v", "g", "beta"):
        assert (x[name] is not None) == m.takes(name), name
        if x[name] is not None:
            assert tuple(x[name].shape) == m.input_shape(name, SIZES), name
    plain = random_inputs(*SIZES.values(), torch.Generator().manual_seed(3))
    assert torch.equal(x["q"], plain["q"]) and torch.equal(x["initial_state"], plain["initial_state"])
    for u in m.unit_gates:  # drawn U[0, 1) in the shapes the contract gives
        assert tuple(x[u.name].shape) == m.input_shape(u.name, SIZES) and 0 <= x[u.name].min() <= x[u.name].max() < 1
    own = {u.name: x[u.name] for u in m.unit_gates}
    o, _ = m.call(**{n: x[n] for n in ("q", "k", "v", "g", "beta")}, **own, **m.bare)  # the op accepts what was drawn
    assert o.shape == (2, 3, 9, 5)


def gate_after_beta(q, k, v, beta, g, **kw):
    """Gated DeltaNet with its tensors in another order: an op whose contract is not the convention's."""
    return gated_deltanet(q, k, v, g, beta, **kw)


REORDERED = dataclasses.replace(
    mechanism("gated_deltanet"),
    key="toy_reordered",
    stage="gated_deltanet",
    narrative=None,
    colour="#123456",
    op=gate_after_beta,
    op_inputs=(*mechanisms.QKV, mechanisms.OpInput("beta", ("B", "H", "T")), mechanisms.OpInput("g", ("B", "H", "T"))),
)


def test_an_entry_stating_its_own_contract_is_called_and_checked_by_it():
    assert [x.name for x in REORDERED.op_contract] == ["q", "k", "v", "beta", "g"]
    x = draw_inputs(REORDERED.op_contract, SIZES, torch.Generator().manual_seed(0))
    mine, _ = REORDERED.call(x["q"], x["k"], x["v"], x["g"], x["beta"])
    theirs, _ = gated_deltanet(x["q"], x["k"], x["v"], x["g"], x["beta"])
    assert torch.equal(mine, theirs)
    with mechanisms.registered(REORDERED):
        checks = [c for c in verify.run_verify() if c.mechanism == REORDERED.key]
        assert checks and all(c.ok for c in checks), checks
    with pytest.raises(ValueError, match="must start with q, k, v"):
        dataclasses.replace(REORDERED, op_inputs=REORDERED.op_inputs[::-1])
    product = mechanisms.OpInput("beta", ("B", "H", "T", "N"))  # a write strength per key of the step (DeltaProduct)
    assert product.shape(SIZES | {"N": 2}) == (2, 3, 9, 2)
    with pytest.raises(ValueError, match="beta is B×H×T×N: sizes lack N"):
        product.shape(SIZES)
    with pytest.raises(ValueError, match="dims must be dimension names"):
        mechanisms.OpInput("w", ("B", "H", 3))
    extra = (*mechanisms.QKV, mechanisms.OpInput("w", ("B", "H", "T")))
    with pytest.raises(ValueError, match=r"draws q, k, v, g, beta and unit gates; the contract also names \['w'\]"):
        draw_inputs(extra, SIZES, torch.Generator())


# ---- write rules as data ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rule", list(mechanisms.write_rules().values()), ids=lambda r: r.key)
def test_a_rule_step_is_the_recurrence_one_step_at_a_time(rule):
    x = make_inputs(T=7, rule=rule.key, gate="channel")
    q, k, v, g, beta, S = (x[n] for n in ("q", "k", "v", "g", "beta", "initial_state"))
    outputs = []
    for t in range(7):
        S = rule.step(
            torch.exp(g[:, :, t, :, None]) * S, k[:, :, t], v[:, :, t], None if beta is None else beta[:, :, t]
        )
        outputs.append(torch.einsum("bhkv,bhk->bhv", S, q[:, :, t] * q.shape[-1] ** -0.5))
    o, S_ref = run_memory(
        q, k, v, g, beta, rule=rule.key, mode="recurrent", initial_state=x["initial_state"], output_final_state=True
    )
    assert_close(torch.stack(outputs, dim=2), o, what=f"{rule.key} step by step")
    assert_close(S, S_ref, what=f"{rule.key} final state")


def erase_step(S, k_t, v_t, beta_t):
    """A toy third rule: erase along k, then write (the delta rule's step, named apart)."""
    return mechanisms.write_rule("delta").step(S, k_t, v_t, beta_t)


ERASE = mechanisms.WriteRule(
    key="toy_erase",
    name="erase",
    equation="S_t = (I − β_t k_t k_tᵀ) S' + β_t k_t v_tᵀ",
    gloss="erase along k, then write",
    takes_beta=True,
    step=erase_step,
    write_flops=lambda C, K, V: {"erase": 2 * C * K * V},
    marker="hexagon",
    lab_dash="longdash",
)


def loop_op(q, k, v, beta, *, scale=None, initial_state=None, output_final_state=False, **kw):
    """The toy rule's op: its step in a loop (what a new rule's op in lineage/ops/ would do in three forms)."""
    B, H, T, K = q.shape
    S = initial_state if initial_state is not None else q.new_zeros(B, H, K, v.shape[-1])
    scale = K**-0.5 if scale is None else scale
    out = []
    for t in range(T):
        S = ERASE.step(S, k[:, :, t], v[:, :, t], beta[:, :, t])
        out.append(torch.einsum("bhkv,bhk->bhv", S, scale * q[:, :, t]))
    return torch.stack(out, dim=2), S if output_final_state else None


def test_a_new_write_rule_is_one_definition_that_every_consumer_reads():
    with pytest.raises(ValueError, match="rule must be one of 'additive', 'delta'"):
        dataclasses.replace(TOY, rule=ERASE.key)
    with mechanisms.registered_rule(ERASE):
        m = dataclasses.replace(
            TOY, key="toy_eraser", stage="toy_eraser", rule=ERASE.key, gate="none", layer=LayerOptions(), op=loop_op
        )
        with mechanisms.registered(m):
            assert [x.name for x in m.op_contract] == ["q", "k", "v", "beta"]  # the rule takes β: the contract says so
            assert stages.grid_rules() == ("additive", "delta", ERASE.key)  # its row on the home page's grid
            assert [s.key for s in stages.grid()[(ERASE.key, "none")]] == [m.key]
            assert stages.grid()[(ERASE.key, "channel")] == ()
            assert palette.mechanism_line(m.key)[1]["symbol"] == "hexagon"
            assert plots_lab.write_dash(ERASE.key) == "longdash"
            flops = bench.chunk_flop_model(ERASE.key, T=8, K=2, V=3, C=4)
            assert flops["erase"] == 2 * 2 * 4 * 2 * 3  # two chunks of its own term
            assert m.key in lab.participants()
            result = lab.capacity(mechanisms=("softmax", m.key), n_max=4, trials=1)
            assert f"{m.label} {result.capacity[m.key]}" in lab.capacity_summary(result)  # counted as a fixed state
    with pytest.raises(ValueError, match="rule must be one of 'additive', 'delta', got 'toy_erase'"):
        mechanisms.write_rule(ERASE.key)


def test_a_consumer_meeting_a_write_it_cannot_draw_says_so():
    with pytest.raises(ValueError, match="'mystery' is neither: add its rule to lineage.mechanisms"):
        plots_lab.write_dash("mystery")
    assert palette.mechanism_line("softmax")[1]["symbol"] == palette.CACHE_MARKER
