"""LinearMemoryMixer and Block: full forward ⇄ recurrent ⇄ token-by-token decoding, prompt splitting, cache size
accounting, causality, KDA's gates."""

from __future__ import annotations

import pytest
import torch

from lineage.mechanisms import MECHANISMS, linear_mechanisms
from lineage.models.layers import Block, LinearMemoryMixer, MixerConfig
from lineage.numerics import rel_rms
from tests.util import assert_close

LINEAR = tuple(m.key for m in linear_mechanisms())  # the linear mechanisms' keys
# K ≠ V so that the hand count of the cache cannot mix them up; T = 19 is not a multiple of the chunk size.
CONFIG = MixerConfig(d_model=16, n_heads=2, head_k=8, head_v=4, conv_size=4, gate_rank=4, chunk_size=8)
B, T = 2, 19


def make_mixer(mechanism: str) -> LinearMemoryMixer:
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return LinearMemoryMixer(mechanism, CONFIG).double()


def make_x(T: int = T, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(B, T, CONFIG.d_model, generator=gen, dtype=torch.float64)


def decode(mixer, x, cache=None):
    """Feed x one token at a time through the cache; return (outputs [B, T, D], the last cache)."""
    ys = []
    for t in range(x.shape[1]):
        y, cache = mixer(x[:, t : t + 1], cache=cache, use_cache=True)
        ys.append(y)
    return torch.cat(ys, dim=1), cache


@pytest.mark.parametrize("mechanism", LINEAR)
def test_chunk_recurrent_parallel_and_token_by_token_decoding_agree(mechanism):
    mixer, x = make_mixer(mechanism), make_x()
    y, state = mixer(x, use_cache=True)
    y_decoded, decoded = decode(mixer, x)
    assert y.shape == (B, T, CONFIG.d_model)
    for mode in ("recurrent", "parallel"):
        assert_close(mixer(x, mode=mode)[0], y, what=f"mode={mode}")
    assert_close(y_decoded, y, what="token-by-token decoding")
    assert_close(decoded.S, state.S, what="decoded state")
    assert decoded.length == state.length == T


@pytest.mark.parametrize("mechanism", LINEAR)
def test_prompt_in_two_calls_through_the_cache_equals_one_call(mechanism):
    mixer, x = make_mixer(mechanism), make_x()
    y, state = mixer(x, use_cache=True)
    y_first, cache = mixer(x[:, :7], use_cache=True)
    y_second, cache = mixer(x[:, 7:], cache=cache)
    assert_close(torch.cat([y_first, y_second], dim=1), y, what="outputs")
    assert_close(cache.S, state.S, what="state")
    assert cache.conv.keys() == state.conv.keys()
    for name in state.conv:
        assert_close(cache.conv[name], state.conv[name], what=f"conv cache {name}")
    assert cache.length == T


@pytest.mark.parametrize("mechanism", LINEAR)
def test_cache_size_is_independent_of_length_and_matches_the_hand_count(mechanism):
    mixer = make_mixer(mechanism)
    H, K, V, size = CONFIG.n_heads, CONFIG.head_k, CONFIG.head_v, CONFIG.conv_size
    prompt = make_x(3)
    sizes = {}
    for n in (5, 50):
        _, cache = mixer(prompt, use_cache=True)
        _, cache = decode(mixer, make_x(n, seed=1), cache)
        assert cache.length == 3 + n
        sizes[n] = (cache.nbytes, cache.recurrent_nbytes)
    options = MECHANISMS[mechanism].layer
    state_elements = H * K * V + (H * K if options.normalize else 0)  # + the normaliser column z
    conv_elements = (size - 1) * (H * K + H * K + H * V) if options.conv else 0  # q, k, v
    fp64 = 8
    assert sizes[5] == sizes[50] == (B * (state_elements + conv_elements) * fp64, B * state_elements * fp64)


@pytest.mark.parametrize("mechanism", LINEAR)
def test_block_runs_and_is_causal(mechanism):
    with torch.random.fork_rng():
        torch.manual_seed(1)
        block = Block(make_mixer(mechanism), CONFIG.d_model).double()
    x = make_x()
    t = 10
    changed = torch.cat([x[:, : t + 1], make_x(seed=1)[:, t + 1 :]], dim=1)
    y, _ = block(x)
    y_changed, _ = block(changed)
    assert y.shape == x.shape and torch.isfinite(y).all()
    assert_close(y_changed[:, : t + 1], y[:, : t + 1], what="outputs up to t")
    assert rel_rms(y_changed[:, t + 1 :], y[:, t + 1 :]) > 0.1, "the change did not reach later outputs"


def test_kda_layer_gate_is_per_channel_and_nonpositive_and_beta_in_open_unit_interval():
    mixer, x = make_mixer("kda"), make_x()
    g, beta = mixer.gates(x)
    assert g.shape == (B, CONFIG.n_heads, T, CONFIG.head_k)
    assert (g <= 0).all()
    assert (g.std(dim=-1) > 0).all(), "the channels of a head share one decay"
    assert beta.shape == (B, CONFIG.n_heads, T)
    assert ((beta > 0) & (beta < 1)).all()
