"""The fast paths a training step takes, each against the form it replaces: values and gradients.

- the scan (``scan_memory``, the chunked form at ``chunk_size=1``) against the reference loop, in every cell;
- the layers' choice of it (``layer_chunk_size``), and a model at the capacity record's size training through the
  form it picks (the chunked form for linear attention);
- the linear layer's joint q/k/v projection and short convolution against each projection and convolution run alone;
- softmax attention through torch's fused kernel against the explicit form, and the attention layer written out;
- the optimiser's update of all parameters at once against one parameter at a time, bit for bit;
- ``train --throughput --baseline``: another checkout's step timed in the same rounds.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import lineage.ops.recurrence as recurrence
from lineage.__main__ import main
from lineage.models import layers
from lineage.models.layers import ConvSelfAttention, LinearMemoryMixer, MixerConfig, ShortConv, joint_conv
from lineage.models.lm import LM, LMConfig, lm_loss, loss_and_accuracy
from lineage.ops.recurrence import chunk_memory, layer_chunk_size, recurrent_memory, scan_memory
from lineage.ops.softmax import fused_softmax_attention, softmax_attention
from lineage.train.loop import TrainConfig, optimiser, train_step
from lineage.train.tasks import IGNORE, TaskConfig, make_batch
from tests.util import CELLS, DTYPE_NAME, assert_close, make_inputs

ROOT = Path(__file__).resolve().parents[1]
# The capacity record's model and batch (data/learned_memory_capacity_grid.json): width 64, 2 layers, 8 heads, 64 × 64
RECORD_TASK = TaskConfig("mqar", vocab_size=64, seq_len=64, n_pairs=16)
RECORD_MODEL = LMConfig(vocab_size=64, max_len=64, d_model=64, n_layers=2, n_heads=8, front_end="conv")


def _memory_and_gradients(form, x: dict, rule: str, seed: int = 1, **kw):
    """(o, S_T, gradients of a random projection of both with respect to every input) of one form."""
    leaves = {name: t.clone().requires_grad_() for name, t in x.items() if t is not None}
    args = [leaves.get(name) for name in ("q", "k", "v", "g", "beta")]
    o, S = form(*args, rule=rule, initial_state=leaves.get("initial_state"), output_final_state=True, **kw)
    gen = torch.Generator().manual_seed(seed)
    loss = (o * torch.randn(o.shape, generator=gen, dtype=o.dtype)).sum()
    loss = loss + (S * torch.randn(S.shape, generator=gen, dtype=S.dtype)).sum()
    return o, S, dict(zip(leaves, torch.autograd.grad(loss, list(leaves.values())), strict=True))


@pytest.mark.parametrize(
    "rule, gate, dtype, state",
    [
        pytest.param(rule, gate, dtype, state, id=f"{rule}-{gate}-{DTYPE_NAME[dtype]}-{'S0' if state else 'zeros'}")
        for (rule, gate), dtype, state in itertools.product(CELLS, (torch.float64, torch.float32), (True, False))
    ],
)
def test_the_scan_is_the_recurrence_in_values_final_state_and_gradients(rule, gate, dtype, state):
    x = make_inputs(B=2, H=3, T=23, K=6, V=5, rule=rule, gate=gate, dtype=dtype, state=state, seed=3)
    o_ref, S_ref, g_ref = _memory_and_gradients(recurrent_memory, x, rule)
    o, S, grads = _memory_and_gradients(scan_memory, x, rule)
    assert_close(o, o_ref, what="o")
    assert_close(S, S_ref, what="S_T")
    assert grads.keys() == g_ref.keys()
    for name, grad in grads.items():
        assert_close(grad, g_ref[name], what=f"∂{name}")


def test_the_scan_wipes_and_keeps_like_the_recurrence():
    """g = −inf (a wipe) and g = 0 (keep everything) at chosen steps: the same outputs and gradients as the loop."""
    x = make_inputs(B=1, H=2, T=12, K=4, V=3, rule="delta", gate="channel", seed=5)
    x["g"][:, :, 4] = -torch.inf
    x["g"][:, :, 7] = 0.0
    o_ref, S_ref, g_ref = _memory_and_gradients(recurrent_memory, x, "delta")
    o, S, grads = _memory_and_gradients(scan_memory, x, "delta")
    assert_close(o, o_ref)
    assert_close(S, S_ref)
    for name, grad in grads.items():
        assert torch.isfinite(grad).all(), name
        assert_close(grad, g_ref[name], what=f"∂{name}")


def _count_scans(monkeypatch) -> list[int]:
    calls = []
    apply = recurrence._Scan.apply

    def counted(*args):
        calls.append(1)
        return apply(*args)

    monkeypatch.setattr(recurrence._Scan, "apply", counted)
    return calls


def test_chunks_of_one_step_run_the_scan_and_longer_chunks_do_not(monkeypatch):
    calls = _count_scans(monkeypatch)
    x = make_inputs(B=1, H=2, T=9, K=4, V=3, rule="delta", gate="scalar")
    args = (x["q"], x["k"], x["v"], x["g"], x["beta"])
    o_one, _ = chunk_memory(*args, rule="delta", chunk_size=1)
    assert len(calls) == 1
    o_two, _ = chunk_memory(*args, rule="delta", chunk_size=2)
    assert len(calls) == 1
    assert_close(o_one, o_two)


def test_the_layer_chunk_size_is_the_scan_for_small_states_of_many_heads_on_a_cpu():
    cpu = recurrence.default_chunk_size("cpu")
    assert layer_chunk_size("cpu", 512, 8, 8) == 1  # the record: 64 sequences × 8 heads of 8
    assert layer_chunk_size("cpu", 512, 4, 4) == 1  # its width-32 points
    assert layer_chunk_size("cpu", recurrence.SCAN_MIN_HEADS - 1, 8, 8) == cpu  # too few heads side by side
    assert layer_chunk_size("cpu", 512, 32, 32) == cpu  # a state too large
    assert layer_chunk_size("cuda", 512, 8, 8) == recurrence.default_chunk_size("cuda")
    # linear attention (products only): the chunked form from smaller states on
    assert layer_chunk_size("cpu", 512, 4, 4, products_only=True) == 1  # the width-32 points keep the scan
    assert layer_chunk_size("cpu", 512, 8, 8, products_only=True) == cpu  # the width-64 points take the chunks
    assert layer_chunk_size("cuda", 512, 4, 4, products_only=True) == recurrence.default_chunk_size("cuda")


def _count_chunked(monkeypatch) -> list[int]:
    """The chunk lengths chunk_memory is called with (its chunk_size=1 runs the scan, which _count_scans counts)."""
    sizes = []
    chunked = recurrence.chunk_memory

    def counted(*args, chunk_size=None, **kw):
        sizes.append(chunk_size)
        return chunked(*args, chunk_size=chunk_size, **kw)

    monkeypatch.setattr(recurrence, "chunk_memory", counted)
    return sizes


@pytest.mark.parametrize("mixer", ["linear_attention", "deltanet", "gated_deltanet", "kda"])
def test_a_model_at_the_records_size_trains_through_the_layers_chunk_size(monkeypatch, mixer):
    """Every layer runs the form layer_chunk_size picks for it: the scan for the delta rule and the gated cells, the
    chunked form for linear attention (products only) at the record's width."""
    scans, sizes = _count_scans(monkeypatch), _count_chunked(monkeypatch)
    model = LM(replace(RECORD_MODEL, mixer=mixer), 0)
    opt, sched = optimiser(model, TrainConfig())
    batch = make_batch(RECORD_TASK, 64, 0)
    train_step(model, opt, sched, batch.tokens, batch.targets)
    H, hd = RECORD_MODEL.n_heads, RECORD_MODEL.head_dim
    plain = mixer == "linear_attention"
    want = layer_chunk_size("cpu", 64 * H, hd, hd, products_only=plain)
    assert want == (recurrence.default_chunk_size("cpu") if plain else 1)
    assert sizes == [want] * RECORD_MODEL.n_layers
    assert len(scans) == (0 if plain else RECORD_MODEL.n_layers)  # one scan per linear layer, or none


def _mixer_written_out(mixer: LinearMemoryMixer, x: torch.Tensor) -> torch.Tensor:
    """The layer's forward from its parts, one projection and one convolution at a time, through the reference loop."""
    cfg, lay = mixer.cfg, mixer.options
    B, T, _ = x.shape
    q, k, v = mixer.q_proj(x), mixer.k_proj(x), mixer.v_proj(x)
    if mixer.conv:
        q, k, v = (F.silu(mixer.convs[n](t, None)[0]) for n, t in zip("qkv", (q, k, v), strict=True))
    q, k, v = mixer._heads(q, cfg.head_k), mixer._heads(k, cfg.head_k), mixer._heads(v, cfg.head_v)
    if lay.l2norm:
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    g, beta = mixer.gates(x)
    kw = {"mode": "recurrent"}
    if lay.feature_map is not None:
        kw.update(feature_map=lay.feature_map, normalize=lay.normalize)
    o, _ = mixer.entry.call(q, k, v, g, beta, **mixer.unit_gates(x), **kw)
    if lay.output_gate != "none":
        gate = mixer._heads(mixer.og_up(mixer.og_down(x)), cfg.head_v)
        o = mixer.o_norm(o) * (torch.sigmoid(gate) if lay.output_gate == "sigmoid" else F.silu(gate))
    return mixer.o_proj(o.transpose(1, 2).reshape(B, T, cfg.n_heads * cfg.head_v))


@pytest.mark.parametrize("mechanism", ["linear_attention", "deltanet", "gated_deltanet", "kda"])
def test_the_linear_layer_is_its_projections_convolutions_and_op_written_out(mechanism):
    """The joint projection and convolution, the contiguous heads and the scan (16 × 4 heads: the layer's chunk size
    is 1) against each part run alone: the same output and the same gradient for every parameter."""
    torch.manual_seed(0)
    mixer = LinearMemoryMixer(mechanism, MixerConfig(d_model=16, n_heads=4, head_k=4, head_v=4, conv=True)).double()
    x = torch.randn(16, 11, 16, dtype=torch.float64)
    assert layer_chunk_size(x.device, 16 * 4, 4, 4) == 1
    y, _ = mixer(x)
    want = _mixer_written_out(mixer, x)
    assert_close(y, want)
    params = [p for _, p in mixer.named_parameters()]
    got = torch.autograd.grad((y * want.detach()).sum(), params)
    expected = torch.autograd.grad((want * want.detach()).sum(), params)
    for (name, _), a, b in zip(mixer.named_parameters(), got, expected, strict=True):
        assert_close(a, b, what=name)


@pytest.mark.parametrize("with_past", [False, True], ids=["from-zeros", "with-past"])
def test_the_joint_convolution_is_each_projections_own(with_past):
    torch.manual_seed(1)
    widths = {"q": 6, "k": 6, "v": 5}
    convs = torch.nn.ModuleDict({n: ShortConv(c, 4) for n, c in widths.items()}).double()
    x = torch.randn(2, 7, sum(widths.values()), dtype=torch.float64, requires_grad=True)
    past = {n: torch.randn(2, 3, c, dtype=torch.float64) for n, c in widths.items()} if with_past else {}
    y, kept = joint_conv(convs, x, widths, past)
    alone = [convs[n](t, past.get(n)) for n, t in zip(widths, x.split(list(widths.values()), -1), strict=True)]
    assert_close(y, torch.cat([a for a, _ in alone], -1))
    for (n, want), got in zip(((n, p) for n, (_, p) in zip(widths, alone, strict=True)), kept.values(), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0, msg=n)
    gy = torch.randn_like(y)
    leaves = [x, *(c.weight for c in convs.values())]
    got = torch.autograd.grad(y, leaves, gy)
    want = torch.autograd.grad(torch.cat([a for a, _ in alone], -1), leaves, gy)
    for a, b in zip(got, want, strict=True):
        assert_close(a, b)


@pytest.mark.parametrize(
    "causal, kv_heads, dtype",
    [
        pytest.param(c, h, d, id=f"{'causal' if c else 'full'}-Hkv{h}-{DTYPE_NAME[d]}")
        for c, h, d in itertools.product((True, False), (4, 2, 1), (torch.float64, torch.float32))
    ],
)
def test_fused_softmax_attention_is_the_explicit_form(causal, kv_heads, dtype):
    gen = torch.Generator().manual_seed(2)
    q = torch.randn(2, 4, 13, 8, generator=gen, dtype=dtype, requires_grad=True)
    k, v = (torch.randn(2, kv_heads, 13, d, generator=gen, dtype=dtype, requires_grad=True) for d in (8, 6))
    o = fused_softmax_attention(q, k, v, causal=causal)
    ref, _ = softmax_attention(q, k, v, causal=causal, mode="parallel")
    assert_close(o, ref)
    go = torch.randn(o.shape, generator=gen, dtype=dtype)
    for a, b in zip(torch.autograd.grad(o, (q, k, v), go), torch.autograd.grad(ref, (q, k, v), go), strict=True):
        assert_close(a, b)


def test_the_attention_layer_is_its_projection_convolutions_and_attention_written_out(monkeypatch):
    torch.manual_seed(3)
    layer = ConvSelfAttention(16, 4).double()
    x = torch.randn(2, 9, 16, dtype=torch.float64)
    fused = []
    monkeypatch.setattr(
        layers, "fused_softmax_attention", lambda *a, **kw: fused.append(1) or fused_softmax_attention(*a, **kw)
    )
    y, _ = layer(x)
    assert fused == [1]
    q, k, v = (F.silu(layer.convs[n](t, None)[0]) for n, t in zip("qkv", layer.c_attn(x).split(16, -1), strict=True))
    q, k, v = (t.view(2, 9, 4, 4).transpose(1, 2) for t in (q, k, v))
    o, _ = softmax_attention(q, k, v, mode="parallel")
    assert_close(y, layer.c_proj(o.transpose(1, 2).reshape(2, 9, 16)))


def test_the_optimiser_updates_every_parameter_at_once_bit_for_bit_as_one_at_a_time():
    cfg = TrainConfig(lr=1e-2)
    fast, slow = (LM(replace(RECORD_MODEL, mixer="kda", d_model=16, n_heads=2), 0) for _ in range(2))
    opt, _ = optimiser(fast, cfg)  # its warm-up has set the first step's learning rate
    assert all(group["foreach"] for group in opt.param_groups)
    decay = [p for p in slow.parameters() if p.dim() >= 2]
    rest = [p for p in slow.parameters() if p.dim() < 2]
    one_at_a_time = torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": rest, "weight_decay": 0.0}],
        lr=opt.param_groups[0]["lr"],
        betas=(0.9, 0.98),
        foreach=False,
    )
    gen = torch.Generator().manual_seed(4)
    for _ in range(3):
        for p, r in zip(fast.parameters(), slow.parameters(), strict=True):
            p.grad = torch.randn(p.shape, generator=gen)
            r.grad = p.grad.clone()
        opt.step()
        one_at_a_time.step()
    for (name, p), r in zip(fast.named_parameters(), slow.parameters(), strict=True):
        assert torch.equal(p, r), name


def test_a_training_step_minimises_the_loss_the_evaluation_reports():
    model = LM(replace(RECORD_MODEL, mixer="deltanet", d_model=16, n_heads=2), 0)
    batch = make_batch(replace(RECORD_TASK, seq_len=16, n_pairs=4), 4, 0)
    logits = model(batch.tokens)
    loss, _ = loss_and_accuracy(logits, batch.targets, IGNORE)
    assert torch.equal(lm_loss(logits, batch.targets, IGNORE), loss)


TINY_THROUGHPUT = ["train", "--throughput", "--mixers", "deltanet", "--vocab", "32", "--seq-len", "16", "--n-pairs",
                   "2", "--d-model", "16", "--heads", "2", "--batch", "4", "--repeats", "1"]  # fmt: skip


def test_the_throughput_command_times_a_baseline_checkout_in_the_same_rounds(capsys):
    assert main([*TINY_THROUGHPUT, "--baseline", str(ROOT)]) == 0  # this checkout as its own baseline
    out = capsys.readouterr().out.splitlines()
    assert f"baseline: the package in {ROOT}" in out[0]
    assert out[1].split() == ["mixer", "T", "chunk", "tok/s", "recurrent", "tok/s", "chunk/recurrent", "baseline",
                              "tok/s", "chunk/baseline"]  # fmt: skip
    name, T, chunk, _, _, baseline, ratio = out[2].split()
    chunk, baseline = float(chunk.replace(",", "")), float(baseline.replace(",", ""))
    assert (name, T) == ("deltanet", "16") and chunk > 0 and baseline > 0
    assert float(ratio.rstrip("×")) == pytest.approx(chunk / baseline, abs=0.006, rel=1e-3)  # rounded in print


@pytest.mark.parametrize(
    "argv, message",
    [
        ([*TINY_THROUGHPUT, "--baseline", "/no/such/checkout"], "baseline '/no/such/checkout' must be a folder"),
        (["train", "--baseline", "."], "--baseline applies only with --throughput"),
    ],
)
def test_a_bad_baseline_gets_one_line_that_names_it(capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err.strip().splitlines()[-1]
