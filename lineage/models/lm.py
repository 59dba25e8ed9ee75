"""A small language model whose token mixer is any mechanism of the lineage, for training on recall tasks.

    logits = head(ln_f(blocks(tok_emb(x) + pos_emb(t))))    blocks: N pre-norm blocks (GPT-2's, lineage.models.layers)

Each block is ``x + mixer(ln_1(x))`` then ``x + mlp(ln_2(x))``; the mixer is the lineage's own layer, with the
gates and β its paper computes from the data (:class:`lineage.models.layers.LinearMemoryMixer`), GPT-2's causal
self-attention for "softmax", and for "hybrid" the Kimi Linear pattern: KDA layers with an MLA layer every
``hybrid_every`` layers (Kimi Linear: every 4th; a 2-layer model gets KDA then MLA). The stack of blocks is
:class:`lineage.models.hybrid.HybridStack`, built from a schedule of layer kinds, so there is one way to stack layers.

Positions enter once, as GPT-2's learned position embedding, for every mixer alike. The front end is matched too
(``front_end``): by default every mixer — softmax included — puts the same short causal convolution (then Swish)
on q, k and v, as Zoology's comparisons give every mixer the same short convolution, so no mechanism wins MQAR by
its front end alone. The convolution hands each position the tokens just before it, which MQAR needs to bind a
value to its key; without it a model must learn that step from the position embedding, and sits on a plateau
("one of the values") for thousands of steps. ``front_end="none"`` takes the convolution off every mixer (the
ablation), ``"paper"`` gives each mechanism its own paper's choice (DeltaNet, Gated DeltaNet, Mamba-2 and KDA have
one; softmax, linear attention and GLA do not). The hybrid's MLA layer never has one (Kimi Linear's has none).

"identity" is a control, not a mechanism: its blocks mix nothing across tokens (the mixer returns its input), so
nothing it predicts can depend on an earlier token; on a recall task it stays at chance. A test trains it beside
softmax and DeltaNet to show that their accuracy comes from the memory.

Training runs the chunked forms (the default ``mode="chunk"`` of every linear op, at the chunk length
:func:`lineage.ops.recurrence.layer_chunk_size` picks: on a CPU, chunks of one step, the scan, for these models' small
states, except linear attention's chunks of 32 from width 64 up); :func:`forms` switches a model to the step-by-step
recurrence, which gives the same outputs, for comparison.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lineage import checks
from lineage.mechanisms import MECHANISMS, layer_mechanism, linear_mechanisms, mechanism
from lineage.models.hybrid import HybridConfig, seeded_stack
from lineage.models.layers import LinearMemoryMixer, MixerConfig
from lineage.schedules import LINEAR_KINDS, periodic_schedule

# The LM mixers: softmax attention, every linear mechanism of the table (their keys, in its order), and the hybrid.
LINEAR_MIXERS = tuple(m.key for m in linear_mechanisms())
MIXERS = ("softmax", *LINEAR_MIXERS, "hybrid")
CONTROLS = ("identity",)  # mixers that are not memories: the no-mixing control
# Mixers that are not entries of the table of mechanisms: the hybrid stack and the no-mixing control.
OTHER_MIXER_TITLES = {"hybrid": "Hybrid (KDA + MLA)", "identity": "No mixing (control)"}


def mixer_title(mixer: str) -> str:
    """A mixer's name wherever one is shown: the mechanism's short label from the table, or the hybrid's / the
    control's (the Learned memory page's charts and sentences, and the ledger's sentence about them)."""
    if mixer in MECHANISMS:
        return MECHANISMS[mixer].label
    return OTHER_MIXER_TITLES.get(mixer, mixer)


FRONT_ENDS = ("conv", "none", "paper")  # short conv on q, k, v for every mixer | for none | as each paper has it
CONV_SIZE = MixerConfig().conv_size  # the short convolution's width (Kimi Linear: 4)


@dataclass(frozen=True)
class LMConfig:
    mixer: str = "deltanet"  # the LM mixer: one of MIXERS, or "identity" (the no-memory control)
    vocab_size: int = 64  # must cover the task's tokens
    max_len: int = 64  # positions the learned position embedding covers (≥ the task's seq_len)
    d_model: int = 64  # residual width; heads split it: head_dim = d_model / n_heads = K = V of each state
    n_layers: int = 2  # blocks; MQAR needs two (one to pair each value with its key, one to recall)
    n_heads: int = 2  # heads per mixer; a linear layer's state is n_heads × head_dim × head_dim numbers
    hybrid_every: int = 2  # "hybrid": an MLA layer at every hybrid_every-th block, KDA elsewhere (Kimi Linear: 4)
    front_end: str = "conv"  # one of FRONT_ENDS: the same short conv on q, k, v for every mixer, none, or the papers'

    def __post_init__(self):
        if self.mixer not in MIXERS + CONTROLS:
            raise ValueError(f"mixer must be one of {', '.join(map(repr, MIXERS + CONTROLS))}, got {self.mixer!r}")
        if self.front_end not in FRONT_ENDS:
            raise ValueError(f"front_end must be one of {', '.join(map(repr, FRONT_ENDS))}, got {self.front_end!r}")
        for name in ("vocab_size", "max_len", "d_model", "n_layers", "n_heads", "hybrid_every"):
            checks.positive_int(name, getattr(self, name))
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads must divide d_model, got d_model = {self.d_model}, n_heads = {self.n_heads}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def schedule(self) -> tuple[str, ...]:
        """The layer kind of every block, bottom to top (kinds of :class:`lineage.models.hybrid.HybridStack`)."""
        if self.mixer == "hybrid":
            return periodic_schedule(self.n_layers, self.hybrid_every, base="kda", kind="mla")
        if self.mixer == "identity":  # the control's mixers are replaced by NoMixing: placeholders of the first kind
            return (LINEAR_KINDS[0],) * self.n_layers
        return (mechanism(self.mixer).layer_kind,) * self.n_layers

    @property
    def state_numbers(self) -> int:
        """Numbers in one linear layer's recurrent state (H × K × V), the "state size" of the Zoology charts."""
        return self.n_heads * self.head_dim * self.head_dim

    @property
    def conv(self) -> bool | None:
        """The stack's conv switch (:class:`lineage.models.hybrid.HybridConfig`): True, False, or None (each
        paper's)."""
        return {"conv": True, "none": False, "paper": None}[self.front_end]

    def carried(self) -> dict[str, int]:
        """Numbers one layer of this model carries from token to token, per sequence, by part.

        Returns ``state`` (H × K × V of a linear layer), ``normaliser`` (linear attention's z: H × K), ``conv``
        (the short convolutions' last ``conv_size − 1`` inputs of q, k and v) and ``per_token`` (a softmax layer's
        KV cache, or the hybrid's MLA latent, grows by this much with every token). The hybrid counts one KDA layer
        and one MLA layer; the control carries nothing.
        """
        H, hd = self.n_heads, self.head_dim
        kinds = set(self.schedule) if self.mixer != "identity" else set()
        out = dict(state=0, normaliser=0, conv=0, per_token=0)
        for kind in kinds:
            m = layer_mechanism(kind)
            if m.is_linear:
                out["state"] += H * hd * hd
                out["normaliser"] += H * hd if m.keeps_normaliser else 0
                out["conv"] += (CONV_SIZE - 1) * 3 * H * hd if (m.layer.conv if self.conv is None else self.conv) else 0
            elif kind == "mla":
                out["per_token"] += self.d_model // 2 + HybridConfig().rope_dim  # the latent and the shared key part
            else:  # "mha": GPT-2's attention keeps every key and value
                out["per_token"] += 2 * H * hd
                out["conv"] += (CONV_SIZE - 1) * 3 * self.d_model if self.conv else 0
        return out

    def to_dict(self) -> dict:
        return asdict(self)


class NoMixing(nn.Module):
    """The control mixer: returns its input, so no position sees any other."""

    def forward(self, x: torch.Tensor, cache=None, use_cache: bool = False):
        return x, None


class LM(nn.Module):
    """Token embedding + learned positions → :class:`HybridStack` of pre-norm blocks → output head.

    The same (config, seed) gives the same weights every time, whatever else the process does.
    """

    def __init__(self, config: LMConfig, seed: int = 0):
        super().__init__()
        self.config = cfg = config
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.max_len, cfg.d_model)
        stack_cfg = HybridConfig(
            schedule=cfg.schedule,
            d_model=cfg.d_model,
            n_heads=cfg.n_heads,
            head_dim=cfg.head_dim,
            kv_lora_rank=cfg.d_model // 2,  # MLA's cached latent, narrower than the model (Kimi Linear: 512 of 2304)
            conv=cfg.conv,
        )
        self.stack = seeded_stack(stack_cfg, seed).train()
        if cfg.mixer == "identity":
            for block in self.stack.blocks:
                block.mixer = NoMixing()
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        gen = torch.Generator().manual_seed(int(seed) + 1)
        for weight in (self.tok_emb.weight, self.pos_emb.weight, self.head.weight):
            nn.init.normal_(weight, std=0.02, generator=gen)  # GPT-2's initialisation

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens [B, T] int64 → logits [B, T, vocab_size] (the next token's distribution at every position)."""
        if tokens.dim() != 2 or tokens.is_floating_point():
            raise ValueError(f"tokens must be an integer tensor [B, T], got {tuple(tokens.shape)} {tokens.dtype}")
        length = tokens.shape[1]
        if length > self.config.max_len:
            raise ValueError(f"sequence length must be ≤ max_len = {self.config.max_len}, got {length}")
        x = self.tok_emb(tokens) + self.pos_emb(torch.arange(length, device=tokens.device))  # (B, T, D)
        y, _ = self.stack(x)
        return self.head(y)  # (B, T, vocab)

    def mixers(self) -> list[LinearMemoryMixer]:
        """The linear-memory layers, bottom to top."""
        return [b.mixer for b in self.stack.blocks if isinstance(b.mixer, LinearMemoryMixer)]


def lm_loss(logits: torch.Tensor, targets: torch.Tensor, ignore: int) -> torch.Tensor:
    """Cross-entropy over the scored positions (targets ≠ ``ignore``): what a training step minimises."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=ignore)


def loss_and_accuracy(logits: torch.Tensor, targets: torch.Tensor, ignore: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy over the scored positions, and the fraction of them whose most likely token is the target."""
    scored = targets != ignore
    correct = (logits.argmax(-1) == targets) & scored
    return lm_loss(logits, targets, ignore), correct.sum() / scored.sum().clamp(min=1)


@contextmanager
def forms(model: nn.Module, mode: str) -> Iterator[nn.Module]:
    """Run every linear-memory layer of ``model`` in ``mode`` ("chunk" or "recurrent") inside the block.

    The layers' forward takes ``mode``; the blocks that call them do not pass it, so a pre-hook sets it.
    """
    if mode not in ("chunk", "recurrent"):
        raise ValueError(f"mode must be 'chunk' or 'recurrent', got {mode!r}")

    def set_mode(module, args, kwargs):
        return args, {**kwargs, "mode": mode}

    handles = [
        m.register_forward_pre_hook(set_mode, with_kwargs=True)
        for m in model.modules()
        if isinstance(m, LinearMemoryMixer)
    ]
    try:
        yield model
    finally:
        for h in handles:
            h.remove()


@dataclass
class LearnedLayer:
    """What one trained linear-memory layer did on one sequence (batch element 0), as numpy.

    Attributes:
        block: the layer's position in the stack (0 = bottom).
        mechanism: its mechanism's key.
        alpha: the decay it applied, α = exp(g): [H, T] (one per head), [H, T, K] (one per key channel), or None.
        beta: its write strength per token, [H, T], or None (additive write).
        states: S_t after every token, [T, H, K, V] (linear attention's normaliser column left out).
    """

    block: int
    mechanism: str
    alpha: np.ndarray | None
    beta: np.ndarray | None
    states: np.ndarray


def learned_layers(model: LM, tokens: torch.Tensor) -> tuple[torch.Tensor, list[LearnedLayer]]:
    """Run ``model`` on ``tokens`` [1, T] and open up its linear-memory layers: the gates and β they computed from
    the data, and their state after every token (each layer decoded one token at a time from its own input).

    Returns (logits [1, T, vocab], one :class:`LearnedLayer` per linear-memory layer, bottom to top).
    """
    if tokens.dim() != 2 or tokens.shape[0] != 1:
        raise ValueError(f"tokens must be one sequence [1, T], got {tuple(tokens.shape)}")
    seen: dict[int, torch.Tensor] = {}

    def keep_input(module, args, kwargs):
        seen[id(module)] = args[0].detach()

    mixers = model.mixers()
    handles = [m.register_forward_pre_hook(keep_input, with_kwargs=True) for m in mixers]
    try:
        with torch.no_grad():
            logits = model(tokens)
    finally:
        for h in handles:
            h.remove()
    blocks = [b.mixer for b in model.stack.blocks]
    layers = []
    with torch.no_grad():
        for mixer in mixers:
            x = seen[id(mixer)]
            g, beta = mixer.gates(x)
            cache, states = None, []
            for t in range(x.shape[1]):
                _, cache = mixer(x[:, t : t + 1], cache=cache, use_cache=True)
                states.append(cache.S[0, ..., : mixer.cfg.head_v])  # (H, K, V)
            layers.append(
                LearnedLayer(
                    block=blocks.index(mixer),
                    mechanism=mixer.mechanism,
                    alpha=None if g is None else torch.exp(g[0]).numpy(),
                    beta=None if beta is None else beta[0].numpy(),
                    states=torch.stack(states).numpy(),
                )
            )
    return logits, layers
