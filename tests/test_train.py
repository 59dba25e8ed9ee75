"""Training: bit-reproducible on the CPU, stops where it says, learns for real, and the recorded sweep is what the
command produces."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from lineage import lm
from lineage.__main__ import main
from lineage.lm import LM, LMConfig, forms, learned_layers, loss_and_accuracy
from lineage.tasks import IGNORE, TaskConfig, make_batch
from lineage.train import TrainConfig, TrainResult, sweep_points, train, training_throughput

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "learned_memory_reference.json"
LONGER = REFERENCE.with_name("learned_memory_longer.json")  # the points the reference did not solve, given longer

# The tiny MQAR of the learning test: 4 pairs, vocabulary 32, 32 tokens. Softmax attention learns it only once a
# head attends to the previous token and a second head then looks up the token after a match (an induction head):
# with seed 0 it sat near 1/4 (a guess among the four values) for about 500 steps and passed 0.9 at step 625, so
# the bound is 800 steps. DeltaNet's short convolution hands it the previous token; it passed 0.9 at step 250.
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
    assert [(layer.block, layer.kind) for layer in layers] == [(0, "kda")]  # the hybrid's block 1 is MLA
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


def test_the_command_refuses_unknown_mixers(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--mixers", "softmax,transformer"])
    assert "mixer must be one of" in capsys.readouterr().err


@pytest.mark.parametrize("path", [REFERENCE, LONGER], ids=["reference", "longer"])
def test_the_recorded_reference_is_what_the_command_produces(path):
    """Re-run the first 30 steps of the recorded sweep's smallest point: the same losses come out."""
    data = json.loads(path.read_text())
    assert data["command"].startswith("python -m lineage train") and data["date"] and data["device"]
    runs = [TrainResult.from_dict(r) for r in data["runs"]]
    point = min(runs, key=lambda r: (r.task["seq_len"], r.task["n_pairs"], r.wall_seconds))
    cfg = TrainConfig(**{**point.train, "max_steps": min(30, point.steps)})
    again = train(TaskConfig(**point.task), LMConfig(**point.model), cfg, seed=point.seed, device="cpu")
    n = len(again.loss)
    # bit-identical on the machine that recorded it; other CPUs may round matrix products differently
    torch.testing.assert_close(torch.tensor(again.loss), torch.tensor(point.loss[:n]), rtol=1e-4, atol=1e-5)
    stored = dict(zip(point.eval_step, point.eval_accuracy, strict=True))
    pairs = zip(again.eval_step, again.eval_accuracy, strict=True)
    shared = [(acc, stored[step]) for step, acc in pairs if step in stored]
    assert shared and all(abs(a - b) <= 1 / (cfg.eval_size * point.task["n_pairs"]) + 1e-9 for a, b in shared)


def test_the_longer_record_continues_the_reference_points_it_extends():
    """Same model, task, seed and optimiser, only a later cap: the longer run's first steps are the reference's."""
    short = [TrainResult.from_dict(r) for r in json.loads(REFERENCE.read_text())["runs"]]
    longer = [TrainResult.from_dict(r) for r in json.loads(LONGER.read_text())["runs"]]
    assert longer
    for a in longer:
        r = next(r for r in short if (r.model, r.task, r.seed) == (a.model, a.task, a.seed))
        assert not r.solved and a.train["max_steps"] > r.train["max_steps"]
        n = min(len(r.loss), len(a.loss))
        torch.testing.assert_close(torch.tensor(a.loss[:n]), torch.tensor(r.loss[:n]), rtol=1e-4, atol=1e-5)
