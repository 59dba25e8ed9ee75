"""Training: bit-reproducible on the CPU, stops where it says, learns for real, and the recorded sweep is what the
command produces."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, replace
from pathlib import Path

import pytest
import torch

from lineage.__main__ import main
from lineage.models import lm
from lineage.models.lm import LM, LMConfig, forms, learned_layers, loss_and_accuracy
from lineage.train import loop, sweep
from lineage.train.loop import TrainConfig, TrainResult, stopped_rising, sweep_points, train, training_throughput
from lineage.train.tasks import IGNORE, TaskConfig, make_batch

RECORD = Path(__file__).resolve().parents[1] / "data" / "learned_memory_sweep.jsonl"
CAPACITY = RECORD.with_name("learned_memory_capacity.jsonl")
CAPACITY_GPU = RECORD.with_name("learned_memory_capacity_gpu.jsonl")  # the part a lent GPU recorded

# The tiny MQAR of the learning test: 4 pairs, vocabulary 32, 32 tokens. With the matched front end (the short
# convolution on q, k, v for every mixer) softmax and DeltaNet are handed the previous token and pass 0.9 within a
# few hundred steps; without it softmax must first learn that step from the position embedding and sat near 1/4 (a
# guess among the four values) for about 500 steps. The bound is 800 steps.
TINY = TaskConfig("mqar", vocab_size=32, seq_len=32, n_pairs=4)
TINY_MODEL = LMConfig(vocab_size=32, max_len=32, d_model=64, n_layers=2, n_heads=4)
LEARN = TrainConfig(lr=1e-3, batch_size=64, max_steps=800, max_seconds=600, target_accuracy=0.9, eval_every=25)


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_the_same_seed_gives_the_same_loss_curve_bit_for_bit():
    cfg = TrainConfig(max_steps=12, eval_every=4, batch_size=16, eval_size=32, target_accuracy=1.0)
    model = replace(TINY_MODEL, mixer="kda", d_model=32, n_heads=2)
    a, b = train(TINY, model, cfg, seed=3), train(TINY, model, cfg, seed=3)
    assert len(a.loss) == 12 and a.loss == b.loss and a.eval_accuracy == b.eval_accuracy
    c = train(TINY, model, cfg, seed=4)
    assert c.loss != a.loss, "another seed trains another model"


@pytest.mark.parametrize("mixer", ["softmax", "deltanet"])
def test_a_memory_learns_tiny_mqar_to_090_within_800_steps(mixer):
    result = train(TINY, replace(TINY_MODEL, mixer=mixer), LEARN, seed=0)
    assert result.stopped == "target", f"{mixer}: {result.accuracy:.3f} after {result.steps} steps"
    assert result.accuracy >= 0.9 and result.steps <= 800


def test_without_token_mixing_the_same_training_stays_near_chance():
    """The mutation that shows the learning test can fail: the identity mixer lets no token see another."""
    result = train(TINY, replace(TINY_MODEL, mixer="identity"), replace(LEARN, max_steps=300), seed=0)
    assert result.stopped == "max_steps"
    assert result.best_accuracy < 3 * TINY.chance  # chance = 1/16 here: a guess among the values


@pytest.mark.parametrize("task", ["palindrome", "stack"])
def test_the_kimi_linear_tasks_train_too(task):
    cfg = TaskConfig(task, vocab_size=32, seq_len=32, n_stacks=3)
    result = train(cfg, replace(TINY_MODEL, mixer="kda", d_model=32, n_heads=2), TrainConfig(max_steps=4, eval_every=2))
    assert result.steps == 4 and len(result.eval_accuracy) == 2 and all(math.isfinite(x) for x in result.loss)


def test_training_stops_at_the_step_and_second_caps_and_when_cancelled():
    model = replace(TINY_MODEL, mixer="linear_attention", d_model=32, n_heads=2)
    base = TrainConfig(batch_size=8, eval_size=16, eval_every=5, target_accuracy=1.0)
    assert train(TINY, model, replace(base, max_steps=7)).steps == 7
    timed = train(TINY, model, replace(base, max_steps=10_000, max_seconds=0.2))
    assert timed.stopped == "max_seconds" and timed.steps < 10_000
    calls = []
    cancelled = train(TINY, model, replace(base, max_steps=100), cancel=lambda: len(calls) > 0 or calls.append(1))
    assert cancelled.stopped == "cancelled" and cancelled.steps == 2
    assert cancelled.eval_step[-1] == 2, "a cancelled run still scores where it stopped"


def test_stopped_rising_is_no_rise_of_min_delta_over_the_last_patience_evaluations():
    assert not stopped_rising([0.1, 0.2, 0.3], patience=2, min_delta=0.01), "too few evaluations to judge"
    assert stopped_rising([0.1, 0.5, 0.5, 0.505], patience=2, min_delta=0.01), "0.5 point is not a rise of 1"
    assert not stopped_rising([0.1, 0.5, 0.5, 0.52], patience=2, min_delta=0.01), "2 points is"
    assert stopped_rising([0.1, 0.6, 0.3, 0.55], patience=2, min_delta=0.01), "measured against the best before"
    assert not stopped_rising([0.1, 0.1, 0.1, 0.1], patience=0, min_delta=0.01), "patience 0 never stops"


def test_the_rule_that_judges_a_record_without_patience_is_the_capacity_grid_s_own():
    blocks = json.loads(CAPACITY.with_name("learned_memory_capacity_grid.json").read_text())["blocks"]
    assert {(b["patience"], b["min_delta"]) for b in blocks} == {loop.STILL_RISING}


def test_a_model_that_stops_rising_stops_on_a_plateau_and_one_still_rising_does_not():
    base = TrainConfig(lr=1e-3, batch_size=64, max_steps=300, eval_every=10, target_accuracy=1.0, patience=4)
    flat = train(TINY, replace(TINY_MODEL, mixer="identity"), base, seed=0)  # nothing to learn: it stalls
    assert flat.stopped == "plateau" and flat.steps < 300
    assert stopped_rising(flat.eval_accuracy, 4, 0.01) and not stopped_rising(flat.eval_accuracy[:-1], 4, 0.01)
    learning = train(TINY, replace(TINY_MODEL, mixer="softmax"), replace(base, max_steps=120), seed=0)
    assert learning.stopped == "max_steps", "softmax is still climbing at 120 steps: patience does not cut it"
    with pytest.raises(ValueError, match="patience must be an integer ≥ 0"):
        TrainConfig(patience=-1)
    with pytest.raises(ValueError, match="min_delta must be in"):
        TrainConfig(min_delta=0.0)


def test_training_the_throughput_measure_and_the_sweep_estimate_run_the_one_train_step(monkeypatch):
    """One step function: a count of its calls sees every step each of the three takes."""
    calls = []
    real = loop.train_step
    monkeypatch.setattr(loop, "train_step", lambda *a: calls.append(1) or real(*a))
    model = replace(TINY_MODEL, mixer="deltanet", d_model=32, n_heads=2)
    cfg = TrainConfig(max_steps=3, eval_every=3, batch_size=4, eval_size=8, target_accuracy=1.0)
    assert train(TINY, model, cfg).steps == 3 and len(calls) == 3
    calls.clear()
    training_throughput(TINY, model, cfg, repeats=1)
    assert len(calls) >= 2, "at least one timed step of each form"
    calls.clear()
    sweep.step_seconds(TINY.to_dict(), model.to_dict(), asdict(cfg), steps=2)
    assert len(calls) == 3, "one warm-up step and two timed"


@pytest.mark.parametrize("per_block", [None, 1, 2], ids=["one-block", "blocks-of-1", "blocks-of-2-and-1"])
def test_the_short_convolution_is_the_causal_depthwise_convolution_forward_and_backward(monkeypatch, per_block):
    """The front end's shifted-slice sum against torch's own depthwise conv1d, values and gradients, with and
    without the cached past inputs, in one block of sequences and in blocks of 1 and of 2 (the last one shorter)."""
    from lineage.models import layers
    from lineage.models.layers import ShortConv

    torch.manual_seed(0)
    conv = ShortConv(6, 4).double()
    x = torch.randn(5, 9, 6, dtype=torch.float64, requires_grad=True)
    past = torch.randn(5, 3, 6, dtype=torch.float64)
    for before in (None, past):
        full = torch.cat([torch.zeros_like(past) if before is None else before, x], dim=1)
        if per_block is not None:  # the bytes of per_block sequences of the convolution's input
            monkeypatch.setattr(layers, "CONV_BLOCK_BYTES", per_block * full[0].numel() * full.element_size())
        sizes = [b.stop - b.start for b in layers._sequence_blocks(5, full[0].numel() * full.element_size())]
        assert sizes == {None: [5], 1: [1, 1, 1, 1, 1], 2: [2, 2, 1]}[per_block]
        y, kept = conv(x, before)
        ref = torch.nn.functional.conv1d(full.transpose(1, 2), conv.weight[:, None, :], groups=6).transpose(1, 2)
        torch.testing.assert_close(y, ref, rtol=0, atol=1e-12)
        torch.testing.assert_close(kept, full[:, -3:], rtol=0, atol=0)
        gy = torch.randn_like(y)
        got = torch.autograd.grad(y, (x, conv.weight), gy)
        want = torch.autograd.grad(ref, (x, conv.weight), gy)
        for a, b in zip(got, want, strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


def test_progress_reports_every_evaluation():
    seen = []
    cfg = TrainConfig(max_steps=10, eval_every=5, batch_size=8, eval_size=16, target_accuracy=1.0)
    result = train(
        TINY, replace(TINY_MODEL, mixer="gla", d_model=32, n_heads=2), cfg, progress=lambda *a: seen.append(a)
    )
    assert [s for s, _, _ in seen] == result.eval_step == [5, 10]
    assert [a for _, _, a in seen] == result.eval_accuracy
    assert seen[-1][1] == result.loss[-1]


def test_result_carries_everything_needed_to_rerun_it():
    cfg = TrainConfig(max_steps=3, eval_every=3, batch_size=4, eval_size=8)
    result = train(TINY, replace(TINY_MODEL, mixer="mamba2", d_model=32, n_heads=2), cfg, seed=9)
    d = json.loads(json.dumps(result.to_dict()))
    assert d["task"] == TINY.to_dict() and d["model"]["mixer"] == "mamba2" and d["seed"] == 9
    assert d["train"]["max_steps"] == 3 and d["device"] == "cpu" and d["torch_version"] == torch.__version__
    assert d["threads"] == 1 and d["wall_seconds"] > 0
    assert TrainResult.from_dict(d).loss == result.loss


def test_chunked_and_recurrent_forms_train_the_same_model():
    model = LM(replace(TINY_MODEL, mixer="gated_deltanet", d_model=32, n_heads=2), 0)
    batch = make_batch(TINY, 4, 0)
    with forms(model, "recurrent"):
        rec, _ = loss_and_accuracy(model(batch.tokens), batch.targets, IGNORE)
    chunk, _ = loss_and_accuracy(model(batch.tokens), batch.targets, IGNORE)
    torch.testing.assert_close(chunk, rec, rtol=1e-5, atol=1e-6)
    rates = training_throughput(
        TINY, replace(TINY_MODEL, mixer="kda", d_model=32, n_heads=2), TrainConfig(batch_size=4), repeats=1
    )
    assert set(rates) == {"chunk", "recurrent"} and all(r > 0 for r in rates.values())


@pytest.mark.parametrize("mixer", lm.MIXERS + lm.CONTROLS)
def test_every_mixer_builds_the_same_weights_from_the_same_seed_and_runs(mixer):
    cfg = replace(TINY_MODEL, mixer=mixer, d_model=32, n_heads=2)
    a, b = LM(cfg, 1), LM(cfg, 1)
    for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q), name
    tokens = make_batch(TINY, 2, 0).tokens
    assert a(tokens).shape == (2, TINY.seq_len, TINY.vocab_size)


def test_learned_layers_open_up_the_gates_beta_and_states_the_model_used():
    model = LM(replace(TINY_MODEL, mixer="hybrid", d_model=32, n_heads=2), 0)
    tokens = make_batch(TINY, 1, 0).tokens
    logits, layers = learned_layers(model, tokens)
    torch.testing.assert_close(logits, model(tokens))
    assert [(layer.block, layer.mechanism) for layer in layers] == [(0, "kda")]  # the hybrid's block 1 is MLA
    kda = layers[0]
    H, T, K = 2, TINY.seq_len, 16
    assert kda.alpha.shape == (H, T, K) and kda.beta.shape == (H, T) and kda.states.shape == (T, H, K, K)
    assert ((kda.alpha > 0) & (kda.alpha <= 1)).all() and ((kda.beta > 0) & (kda.beta < 1)).all()
    # the state after the last token is the one the layer hands on: the chunked form's final state
    mixer = model.mixers()[0]
    seen = {}
    handle = mixer.register_forward_pre_hook(lambda m, a, k: seen.update(x=a[0]), with_kwargs=True)
    model(tokens)
    handle.remove()
    _, state = mixer(seen["x"], use_cache=True)
    torch.testing.assert_close(torch.from_numpy(kda.states[-1]), state.S[0].detach(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(mixer="linear"), "mixer must be one of"),
        (dict(d_model=30, n_heads=4), "n_heads must divide d_model"),
    ],
)
def test_bad_model_configs_say_what_is_allowed(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LMConfig(**kwargs)


def test_bad_training_requests_say_what_is_wrong():
    with pytest.raises(ValueError, match="target_accuracy must be in"):
        TrainConfig(target_accuracy=1.5)
    with pytest.raises(ValueError, match="must cover the task's seq_len"):
        train(TaskConfig(seq_len=64), LMConfig(max_len=32), TrainConfig(max_steps=1))


def test_sweep_points_form_the_zoology_grid():
    base = TaskConfig(seq_len=64, n_pairs=8)
    points = sweep_points(["softmax", "kda"], task=base, pairs=[4, 8], lengths=[32, 64])
    grid = [(p.mixer, p.task.n_pairs, p.task.seq_len) for p in points]
    assert grid == [
        ("softmax", 4, 64), ("kda", 4, 64), ("softmax", 8, 64), ("kda", 8, 64),
        ("softmax", 8, 32), ("kda", 8, 32),
    ]  # fmt: skip
    # (pairs 8, length 64) appears once: it belongs to both sweeps


def test_the_command_writes_every_run_with_its_config(tmp_path, capsys):
    out = tmp_path / "r.json"
    argv = ["train", "--task", "mqar", "--mixers", "deltanet,softmax", "--vocab", "32", "--seq-len", "32",
            "--n-pairs", "4", "--d-model", "32", "--heads", "2", "--steps", "3", "--eval-every", "3", "--batch", "4",
            "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(out.read_text())
    assert data["command"] == "python -m lineage " + " ".join(argv)
    assert data["threads"] == 1 and data["device"] == "cpu" and data["date"]
    assert [r["model"]["mixer"] for r in data["runs"]] == ["deltanet", "softmax"]
    assert all(len(r["loss"]) == 3 for r in data["runs"])
    assert "deltanet" in capsys.readouterr().out


def test_the_command_measures_chunked_against_recurrent_training_throughput(capsys):
    argv = ["train", "--throughput", "--mixers", "deltanet", "--vocab", "32", "--seq-len", "32", "--n-pairs", "4",
            "--d-model", "32", "--heads", "2", "--batch", "4", "--repeats", "1"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == ["mixer", "T", "chunk", "tok/s", "recurrent", "tok/s", "chunk/recurrent"]
    name, T, chunk, recurrent, ratio = out[2].split()
    assert (name, T) == ("deltanet", "32")
    chunk, recurrent = float(chunk.replace(",", "")), float(recurrent.replace(",", ""))
    assert chunk > 0 and recurrent > 0
    assert float(ratio.rstrip("×")) == pytest.approx(chunk / recurrent, abs=0.006, rel=1e-3)  # rounded in print


def test_the_recorded_sweep_is_what_the_command_produces():
    """Re-run the first 30 steps of the recorded sweep's quickest point: the same losses come out."""
    lines = sweep.read_results(RECORD)
    assert lines and all(r["run"]["command"].startswith("python -m lineage sweep") for r in lines)
    point = TrainResult.from_dict(
        min(lines, key=lambda r: r["result"]["wall_seconds"] / r["result"]["steps"])["result"]
    )
    cfg = TrainConfig(**{**point.train, "max_steps": min(30, point.steps)})
    again = train(TaskConfig(**point.task), LMConfig(**point.model), cfg, seed=point.seed, device="cpu")
    n = len(again.loss)
    # bit-identical on the machine that recorded it; other CPUs may round matrix products differently
    torch.testing.assert_close(torch.tensor(again.loss), torch.tensor(point.loss[:n]), rtol=1e-4, atol=1e-5)
    stored = dict(zip(point.eval_step, point.eval_accuracy, strict=True))
    pairs = zip(again.eval_step, again.eval_accuracy, strict=True)
    shared = [(acc, stored[step]) for step, acc in pairs if step in stored]
    assert shared and all(abs(a - b) <= 1 / (cfg.eval_size * point.task["n_pairs"]) + 1e-9 for a, b in shared)


@pytest.mark.skipif(not CAPACITY.exists(), reason="no capacity record in this copy")
def test_the_capacity_record_is_what_its_command_produces():
    """Re-run the first 30 steps of the capacity record's quickest point: the same losses come out."""
    lines = sweep.read_results(CAPACITY)
    assert lines and all(
        r["run"]["command"].startswith("python -m lineage sweep data/learned_memory_capacity_grid.json") for r in lines
    )
    point = TrainResult.from_dict(min(lines, key=lambda r: r["result"]["cpu_seconds"] / r["result"]["steps"])["result"])
    cfg = TrainConfig(**{**point.train, "max_steps": min(30, point.steps)})
    again = train(TaskConfig(**point.task), LMConfig(**point.model), cfg, seed=point.seed, device="cpu")
    torch.testing.assert_close(
        torch.tensor(again.loss), torch.tensor(point.loss[: len(again.loss)]), rtol=1e-4, atol=1e-5
    )


@pytest.mark.skipif(not CAPACITY.exists(), reason="no capacity record in this copy")
def test_the_capacity_record_holds_its_grid_points_in_order_of_priority_and_each_stopped_by_its_rule():
    """Every point is a point of its grid and of the cluster grid, the record a prefix of the grid (one worker: at
    most the point in flight is missing); each point stopped at its target, by the patience rule, or at its budget."""
    grid, _ = sweep.points_of(sweep.read_grid(CAPACITY.with_name("learned_memory_capacity_grid.json")))
    whole, _ = sweep.points_of(sweep.read_grid(CAPACITY.with_name("learned_memory_grid.json")))
    lines = sweep.read_results(CAPACITY)
    keys, grid_keys = [r["key"] for r in lines], [p.key for p in grid]
    assert set(keys) <= set(grid_keys) <= {p.key for p in whole}
    assert sorted(grid_keys.index(k) for k in keys) == list(range(len(keys))), "the first points of the grid"
    for r in (line["result"] for line in lines):
        cfg = TrainConfig(**r["train"])
        rule = stopped_rising(r["eval_accuracy"], cfg.patience, cfg.min_delta)
        assert r["stopped"] == (
            "target" if r["accuracy"] >= cfg.target_accuracy else "plateau" if rule else "max_steps"
        ), r["stopped"]


@pytest.mark.skipif(not CAPACITY_GPU.exists(), reason="no GPU part of the capacity record in this copy")
def test_the_gpu_part_of_the_capacity_record_is_points_of_its_grid_each_on_its_named_device_and_stopped_by_its_rule():
    """Every point of the GPU's part is a point of its grid and of the cluster grid, none a point of the CPU's part,
    with the CPU part's model, task and training settings; each names the CUDA device it ran on and its command,
    and stopped at its target, by the patience rule, or at its budget."""
    grid, _ = sweep.points_of(sweep.read_grid(CAPACITY_GPU.with_name("learned_memory_capacity_gpu_grid.json")))
    whole, _ = sweep.points_of(sweep.read_grid(CAPACITY_GPU.with_name("learned_memory_grid.json")))
    lines = sweep.read_results(CAPACITY_GPU)
    keys = {r["key"] for r in lines}
    assert lines and len(keys) == len(lines) and keys <= {p.key for p in grid} <= {p.key for p in whole}
    cpu = sweep.read_results(CAPACITY) if CAPACITY.exists() else []
    assert not keys & {r["key"] for r in cpu}
    command = (
        "python -m lineage sweep data/learned_memory_capacity_gpu_grid.json --out data/learned_memory_capacity_gpu"
    )
    for line in lines:
        r = line["result"]
        assert line["run"]["command"].startswith(command) and "--device cuda" in line["run"]["command"]
        assert r["device"].startswith("cuda: ") and "+cu" in r["torch_version"], (r["device"], r["torch_version"])
        cfg = TrainConfig(**r["train"])
        rule = stopped_rising(r["eval_accuracy"], cfg.patience, cfg.min_delta)
        assert r["stopped"] == (
            "target" if r["accuracy"] >= cfg.target_accuracy else "plateau" if rule else "max_steps"
        ), r["stopped"]
        for other in cpu[:1]:  # the same experiment as the CPU's part, but for mechanism, pairs, width and seed
            same = ("vocab_size", "seq_len", "task")
            assert {k: r["task"][k] for k in same} == {k: other["result"]["task"][k] for k in same}
            drop = ("mixer", "d_model")
            assert {k: v for k, v in r["model"].items() if k not in drop} == {
                k: v for k, v in other["result"]["model"].items() if k not in drop
            }
            assert r["train"] == other["result"]["train"]


@pytest.mark.skipif(not CAPACITY_GPU.exists(), reason="no GPU part of the capacity record in this copy")
@pytest.mark.parametrize("mixer", ["softmax", "kda"])
def test_a_gpu_point_of_the_capacity_record_is_the_same_run_on_a_cpu(mixer):
    """The GPU trains from the weights and batches the CPU draws: the first 30 steps of a GPU point, re-run here on
    the CPU, give the same losses to fp32 rounding (measured: 5e-7 relative over 50 steps)."""
    lines = [r for r in sweep.read_results(CAPACITY_GPU) if r["result"]["model"]["mixer"] == mixer]
    point = TrainResult.from_dict(
        min(lines, key=lambda r: r["result"]["wall_seconds"] / r["result"]["steps"])["result"]
    )
    cfg = TrainConfig(**{**point.train, "max_steps": min(30, point.steps)})
    again = train(TaskConfig(**point.task), LMConfig(**point.model), cfg, seed=point.seed, device="cpu")
    torch.testing.assert_close(
        torch.tensor(again.loss), torch.tensor(point.loss[: len(again.loss)]), rtol=1e-4, atol=1e-5
    )


def test_the_recorded_sweep_holds_the_cpu_grid_points_in_order_of_priority():
    """Every recorded point is a point of the CPU grid, and of the whole grid; the record is a prefix of the CPU
    grid's points up to the points in flight when it stopped (the pool runs them in order)."""
    cpu, _ = sweep.points_of(sweep.read_grid(RECORD.with_name("learned_memory_grid_cpu.json")))
    whole, _ = sweep.points_of(sweep.read_grid(RECORD.with_name("learned_memory_grid.json")))
    keys = [r["key"] for r in sweep.read_results(RECORD)]
    cpu_keys = [p.key for p in cpu]
    assert set(keys) <= set(cpu_keys) <= {p.key for p in whole}
    last = max(cpu_keys.index(k) for k in keys)
    assert len(keys) >= last + 1 - 2, "at most the two points in flight (2 workers) are missing before the last one"


@pytest.mark.parametrize("front_end", ["conv", "none", "paper"])
def test_the_front_end_is_the_same_for_every_mixer_or_each_papers_own(front_end):
    from lineage.models.layers import ConvSelfAttention, LinearMemoryMixer
    from lineage.ops.softmax import CausalSelfAttention

    for mixer in lm.MIXERS:
        model = LM(replace(TINY_MODEL, mixer=mixer, d_model=32, n_heads=2, front_end=front_end), 0)
        for block in model.stack.blocks:
            m = block.mixer
            if isinstance(m, LinearMemoryMixer):
                expected = {"conv": True, "none": False, "paper": m.entry.layer.conv}[front_end]
                assert m.conv == expected and hasattr(m, "convs") == expected, (mixer, front_end)
            elif isinstance(m, CausalSelfAttention):
                assert isinstance(m, ConvSelfAttention) == (front_end == "conv"), (mixer, front_end)


@pytest.mark.parametrize("front_end", ["conv", "none", "paper"])
@pytest.mark.parametrize("mixer", [m for m in lm.MIXERS if m != "softmax"])
def test_what_a_layer_carries_is_what_its_decoding_cache_holds(mixer, front_end):
    """LMConfig.carried counts every number a layer keeps between tokens: state, normaliser, conv cache, and a
    growing cache per token — checked against the caches a real decode holds after T tokens."""
    cfg = replace(TINY_MODEL, mixer=mixer, d_model=32, n_heads=2, front_end=front_end)
    model = LM(cfg, 0)
    T = 5
    _, caches = model.stack(torch.randn(1, T, 32), use_cache=True)
    c = cfg.carried()
    held = sum(cache.nbytes // 4 for cache in caches)  # fp32 numbers, batch 1
    per_kind = len(set(cfg.schedule)) == len(cfg.schedule)  # one layer of each kind: the counts compare directly
    expected = c["state"] + c["normaliser"] + c["conv"] + c["per_token"] * T
    assert held == (expected if per_kind else expected * len(cfg.schedule))


def test_softmax_carries_its_kv_cache_and_the_convolution_cache():
    cfg = replace(TINY_MODEL, mixer="softmax", d_model=32, n_heads=2, front_end="none")
    model = LM(cfg, 0)
    _, caches = model.stack(torch.randn(1, 5, 32), use_cache=True)
    assert caches[0].nbytes // 4 == cfg.carried()["per_token"] * 5 and cfg.carried()["conv"] == 0
    assert replace(cfg, front_end="conv").carried()["conv"] == 3 * 3 * 32  # 3 past inputs of q, k and v


def test_softmax_with_the_convolution_runs_whole_sequences_only():
    from lineage.models.layers import ConvSelfAttention

    layer = ConvSelfAttention(16, 2)
    y, cache = layer(torch.randn(2, 7, 16))
    assert y.shape == (2, 7, 16) and cache is None
    with pytest.raises(ValueError, match="whole sequences only"):
        layer(torch.randn(1, 1, 16), use_cache=True)
    # causal: the output at t does not change when later tokens do
    x = torch.randn(1, 7, 16)
    x2 = x.clone()
    x2[:, 4:] += 1.0
    torch.testing.assert_close(layer(x)[0][:, :4], layer(x2)[0][:, :4])


def test_the_command_writes_each_finished_model_at_once_and_ctrl_c_keeps_them(tmp_path):
    """Interrupt ``train`` after its first model is on disk: the file keeps it, and the message says so."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "r.json"
    argv = [sys.executable, "-m", "lineage", "train", "--mixers", "deltanet,softmax", "--vocab", "32", "--seq-len",
            "32", "--n-pairs", "4", "--d-model", "32", "--heads", "2", "--steps", "2", "--eval-every", "2",
            "--batch", "4", "--out", str(out)]  # fmt: skip
    first = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
    assert first.wait(timeout=300) == 0
    done = json.loads(out.read_text())
    assert done["complete"] and len(done["runs"]) == 2
    # Each model now trains for 15 s at most (or to its target): the first is written after at most that long however
    # busy the machine, and the second cannot reach its target in the half second before the interrupt.
    slow = argv[: argv.index("--steps") + 1] + ["100000", "--seconds", "15"] + argv[argv.index("--steps") + 2 :]
    out.unlink()
    proc = subprocess.Popen(slow, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
    deadline = time.monotonic() + 300
    first_written = False
    while not first_written and time.monotonic() < deadline:  # the event: the first model on disk
        time.sleep(0.5)
        try:
            written = json.loads(out.read_text())
            first_written = len(written["runs"]) == 1 and not written["complete"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            continue
    assert first_written, "the first model was not written within 300 s"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert f"interrupted: 1 of 2 finished point(s) kept in {out}" in err and "Traceback" not in err
    kept = json.loads(out.read_text())
    assert not kept["complete"] and [r["model"]["mixer"] for r in kept["runs"]] == ["deltanet"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--mixers", ""], "--mixers names no mechanism: give 'all' or a comma list of softmax"),
        (["--mixers", " , "], "--mixers names no mechanism"),
        (["--mixers", "softmax,transformer"], "--mixers: unknown 'transformer'; allowed: all, softmax"),
        (["--vocab", "1"], "MQAR draws --n-pairs distinct keys"),
        (["--pairs", "a,b"], "argument --pairs: expected comma-separated integers such as 4,8,16, got 'a,b'"),
        (["--task", "stack", "--pairs", "4,8"], "--pairs applies only with --task mqar"),
        (["--task", "palindrome", "--n-stacks", "3"], "--n-stacks applies only with --task stack"),
        (["--repeats", "3"], "--repeats applies only with --throughput"),
        (["--throughput", "--out", "x.json"], "--out applies only when training"),
        (["--steps", "0"], "--steps must be >= 1, got 0"),
        (["--patience", "-1"], "--patience must be an integer ≥ 0"),
        (["--min-delta", "2"], "--min-delta must be in (0, 1)"),
        (["--throughput", "--patience", "5"], "--patience applies only when training"),
        (["--out", "/no/such/folder/r.json"], "--out '/no/such/folder/r.json': the folder '/no/such/folder' does not"),
    ],
)
def test_bad_train_requests_get_one_line_that_names_the_flag(capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        main(["train", *argv])
    assert exc.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert message in last, last


def test_bench_checks_its_json_path_and_options_before_any_work(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--json", "/no/such/folder/b.json"])
    assert "--json '/no/such/folder/b.json': the folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", "decode", "--T", "64"])
    assert "--T applies only with bench ops" in capsys.readouterr().err
