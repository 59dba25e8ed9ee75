"""Synthetic recall tasks for training tiny language models, generated in process and seeded (nothing downloaded).

Every task yields a :class:`Batch`: token ids ``tokens [B, T]`` and ``targets [B, T]``, where ``targets[b, t]`` is
the token the model must predict after reading ``tokens[b, : t + 1]`` at a *scored* position, and ``IGNORE``
everywhere else. Accuracy is the fraction of scored positions whose most likely next token is the target.

- **MQAR**, multi-query associative recall — Zoology (Arora et al. 2023, arXiv 2312.04927, section 3). Key–value pairs
  ``k₁ v₁ k₂ v₂ …`` open the sequence (keys from the lower half of the vocabulary, values from the upper half, each
  drawn without replacement); then every key is asked once more, at an even offset drawn from the power law p(gap) ∝
  gap^(a − 1) with Zoology's a = 0.01 (most queries close to the pairs, a few far away), and the model must answer
  with that key's value. The other positions hold a filler token (0) — Zoology's ``random_non_queries=False`` — so the
  only thing a model can use is recall. The DeltaNet paper (Yang et al. 2024, arXiv 2406.06484) trains on the same
  task among its synthetic benchmarks, after Zoology. Gated DeltaNet (Yang, Kautz and Hatamizadeh, ICLR 2025, arXiv
  2412.06464) does not: its own synthetic recall test is RULER's single needle-in-a-haystack suite (S-NIAH-1/2/3:
  passkey, number and UUID needles). The Kimi Linear report (arXiv 2510.26692, §5.1) uses MQAR as well and cites
  Zoology for it, but its worked example is laid out otherwise: all the pairs, a separator, then some of the keys back
  to back, each scored with its value (``A 1 C 3 B 0 … <sep> B G`` → 0, 5). Ours keeps Zoology's layout: no separator,
  every key asked once, the queries spread out by the power law.
- **Palindrome** and **Stack** — two of the three synthetic tests of the Kimi Linear report, §5.1 "Synthetic tests"
  (pp. 7–8), whose results are its Figure 4, panels (a) Palindrome, (b) MQAR, (c) Stack: accuracy against the
  training length (256, 512, 1,024, 2,048 tokens) and against training steps (to 20K, at 1,024 tokens) for KDA,
  Gated DeltaNet and Mamba-2. Its setting: 2 layers, 2 heads of dimension 128, at most 20,000 steps, the best of
  four learning rates (5e-5, 1e-4, 5e-4, 1e-3); the figure plots *training* accuracy (the peak, against length);
  the vocabulary, batch size and optimiser are not given in the text. Its reading: on all three tasks KDA has the
  highest accuracy at every length, on Palindrome and MQAR it converges markedly faster than Gated DeltaNet (the
  report credits the per-channel decay), and Mamba-2 — decay without a delta rule — fails all three. Ours against
  the report's definitions:

  * Palindrome — the report: random tokens, a separator, then the model must produce the same tokens in reverse
    (its example ``O G R S U N E <sep> E N U S R G O``). Ours: the same layout, L = seq_len/2 tokens drawn
    uniformly from 2 … V − 1, then the separator, then the reversal. One difference in scoring: we score from the
    separator on, so the first reversed token — the one just before the separator, a one-step copy — is scored
    as well, while the report's example marks it unscored. That is one easy position in L, so our accuracy can
    sit up to 1/L above what the report's scoring would give. (Our sequence stops before the last reversed token,
    which is only ever a target; the report's example feeds it and scores nothing after it — the same thing.)
  * Stack — the report: 64 independent stacks with an ID each, and a stream of three-token operations,
    ``<PUSH> 1 G`` (put G on stack 1) and ``<POP> 0 E``, where the model must predict E, the top of stack 0.
    Ours: the same last-in-first-out operations on ``n_stacks`` stacks (4 by default, and on the page), each two
    tokens long because the operation and the stack ID share one token: ``PUSH_s x`` puts x on stack s, ``POP_s x``
    takes the top value x off stack s, and the POP token is scored — the model must name the value on top of
    that stack, which depends on every push and pop to it since. Pushes and pops are equally likely; a pop of an
    empty stack goes to a non-empty one instead (or becomes a push), a case the report does not describe.

  Sizes differ throughout: the report trains on 256–2,048 tokens for up to 20,000 steps with heads of 128; the
  app's runs are far smaller (on the page: at most 64 tokens, hundreds to a few thousand steps, heads of 16),
  and it scores held-out sequences, not the training ones.

Vocabulary layout: 0 is the filler token; every task keeps its own special tokens below its data tokens, so a
sequence's answers can be recovered from the sequence itself (see :func:`answers_by_lookup`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from lineage import checks

IGNORE = -100  # target of an unscored position (torch's cross-entropy ignore_index)
TASKS = ("mqar", "palindrome", "stack")
TASK_TITLES = {
    "mqar": "MQAR (Zoology)",
    "palindrome": "Palindrome (Kimi Linear §5.1)",
    "stack": "Stack (Kimi Linear §5.1)",
}
ZOOLOGY_POWER_A = 0.01  # exponent of the query-gap power law in Zoology's MQAR generator
PALINDROME_SEP = 1  # the separator between a palindrome's two halves


@dataclass(frozen=True)
class TaskConfig:
    """One synthetic task at one size. ``n_pairs`` is read by MQAR, ``n_stacks`` by Stack."""

    task: str = "mqar"  # "mqar" | "palindrome" | "stack"
    vocab_size: int = 64  # tokens, special ones included; more values make chance lower and recall harder
    seq_len: int = 64  # T, tokens per sequence
    n_pairs: int = 8  # MQAR: key–value pairs (needs 4·n_pairs ≤ T: the pairs, then one query slot each)
    n_stacks: int = 4  # Stack: how many stacks the operations address

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {', '.join(map(repr, TASKS))}, got {self.task!r}")
        checks.positive_int("vocab_size", self.vocab_size)
        checks.positive_int("seq_len", self.seq_len)
        if self.seq_len < 4 or self.seq_len % 2:
            raise ValueError(f"seq_len must be even and at least 4, got {self.seq_len}")
        if self.task == "mqar":
            checks.positive_int("n_pairs", self.n_pairs)
            if self.vocab_size < 2 * self.n_pairs + 2:
                raise ValueError(
                    f"MQAR draws n_pairs distinct keys from 1 … vocab_size/2 − 1 and as many values from the upper "
                    f"half: n_pairs = {self.n_pairs} needs vocab_size ≥ {2 * self.n_pairs + 2}, got {self.vocab_size}"
                )
            if 4 * self.n_pairs > self.seq_len:
                raise ValueError(
                    f"MQAR needs seq_len ≥ 4·n_pairs (the pairs, then a query slot per pair): n_pairs = "
                    f"{self.n_pairs} needs seq_len ≥ {4 * self.n_pairs}, got {self.seq_len}"
                )
        elif self.task == "palindrome":
            if self.vocab_size < 4:
                raise ValueError(
                    f"palindrome needs vocab_size ≥ 4 (filler, separator, 2 data tokens), got {self.vocab_size}"
                )
        else:
            checks.positive_int("n_stacks", self.n_stacks)
            if self.vocab_size < 1 + 2 * self.n_stacks + 2:
                raise ValueError(
                    f"stack needs vocab_size ≥ 2·n_stacks + 3 (filler, PUSH and POP per stack, 2 values): "
                    f"n_stacks = {self.n_stacks} needs ≥ {2 * self.n_stacks + 3}, got {self.vocab_size}"
                )

    @property
    def chance(self) -> float:
        """Accuracy of guessing uniformly among the tokens an answer can be."""
        if self.task == "mqar":
            return 1.0 / (self.vocab_size - self.vocab_size // 2)
        if self.task == "palindrome":
            return 1.0 / (self.vocab_size - 2)
        return 1.0 / (self.vocab_size - 1 - 2 * self.n_stacks)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Batch:
    tokens: torch.Tensor  # [B, T] int64 token ids
    targets: torch.Tensor  # [B, T] int64: the answer at scored positions, IGNORE elsewhere

    @property
    def scored(self) -> torch.Tensor:
        """[B, T] bool: the positions whose prediction is scored."""
        return self.targets != IGNORE


def make_batch(cfg: TaskConfig, batch_size: int, generator: torch.Generator | int) -> Batch:
    """``batch_size`` sequences of ``cfg``'s task, drawn from ``generator`` (or a fresh one seeded with it)."""
    checks.positive_int("batch_size", batch_size)
    gen = generator if isinstance(generator, torch.Generator) else torch.Generator().manual_seed(int(generator))
    return {"mqar": _mqar, "palindrome": _palindrome, "stack": _stack}[cfg.task](cfg, batch_size, gen)


def _draw_distinct(B: int, n: int, low: int, high: int, gen: torch.Generator) -> torch.Tensor:
    """[B, n] integers from [low, high), distinct within each row."""
    return torch.rand(B, high - low, generator=gen).argsort(dim=1)[:, :n] + low


def _mqar(cfg: TaskConfig, B: int, gen: torch.Generator) -> Batch:
    T, N, Vh = cfg.seq_len, cfg.n_pairs, cfg.vocab_size // 2
    keys = _draw_distinct(B, N, 1, Vh, gen)  # [B, N] from [1, V/2)
    values = _draw_distinct(B, N, Vh, cfg.vocab_size, gen)  # [B, N] from [V/2, V)
    tokens = torch.zeros(B, T, dtype=torch.long)
    targets = torch.full((B, T), IGNORE, dtype=torch.long)
    tokens[:, 0 : 2 * N : 2], tokens[:, 1 : 2 * N : 2] = keys, values
    # Query slots are the even offsets after the pairs; slot s sits at position 2N + 2s. Zoology's power law
    # p(s) ∝ (s + 1)^(a − 1) puts most queries right after the pairs and a few near the end.
    slots = (T - 2 * N) // 2
    p = (torch.arange(1, slots + 1, dtype=torch.float64) ** (ZOOLOGY_POWER_A - 1)).expand(B, slots)
    gap = torch.multinomial(p, N, replacement=False, generator=gen)  # [B, N] distinct slots
    pos = 2 * N + 2 * gap
    tokens.scatter_(1, pos, keys)
    targets.scatter_(1, pos, values)
    return Batch(tokens, targets)


def _palindrome(cfg: TaskConfig, B: int, gen: torch.Generator) -> Batch:
    L = cfg.seq_len // 2
    data = torch.randint(2, cfg.vocab_size, (B, L), generator=gen)
    # tokens: a_1 … a_L SEP a_L … a_2; at the separator and after it the next token is the next reversed one
    tokens = torch.cat([data, torch.full((B, 1), PALINDROME_SEP), data.flip(1)[:, : L - 1]], dim=1)
    targets = torch.full((B, 2 * L), IGNORE, dtype=torch.long)
    targets[:, L:] = data.flip(1)
    return Batch(tokens, targets)


def _stack(cfg: TaskConfig, B: int, gen: torch.Generator) -> Batch:
    S, T = cfg.n_stacks, cfg.seq_len
    first_value = 1 + 2 * S  # PUSH_s = 1 + s, POP_s = 1 + S + s, values from 1 + 2S
    n_ops = T // 2
    choose_push = torch.rand(B, n_ops, generator=gen) < 0.5
    which = torch.randint(0, S, (B, n_ops), generator=gen)
    pushed = torch.randint(first_value, cfg.vocab_size, (B, n_ops), generator=gen)
    fallback = torch.rand(B, n_ops, S, generator=gen).argsort(dim=-1)  # a random order of stacks per step
    tokens = torch.zeros(B, T, dtype=torch.long)
    targets = torch.full((B, T), IGNORE, dtype=torch.long)
    for b in range(B):  # the stacks themselves are plain Python lists: the generator draws above are vectorised
        stacks: list[list[int]] = [[] for _ in range(S)]
        for i in range(n_ops):
            s = int(which[b, i])
            if not choose_push[b, i] and not stacks[s]:  # pop from a non-empty stack instead, if there is one
                s = next((int(o) for o in fallback[b, i] if stacks[int(o)]), s)
            if choose_push[b, i] or not stacks[s]:
                x = int(pushed[b, i])
                stacks[s].append(x)
                tokens[b, 2 * i], tokens[b, 2 * i + 1] = 1 + s, x
            else:
                x = stacks[s].pop()
                tokens[b, 2 * i], tokens[b, 2 * i + 1] = 1 + S + s, x
                targets[b, 2 * i] = x
    return Batch(tokens, targets)


def answers_by_lookup(cfg: TaskConfig, tokens: torch.Tensor) -> torch.Tensor:
    """Every scored position's answer, recovered from the tokens alone (IGNORE elsewhere) — a check on the tasks:
    the answers are determined by the context, so a model that reads the context can be right every time.

    MQAR: the value that followed the queried key in the pairs; Palindrome: the token mirrored across the separator;
    Stack: the top of the popped stack, replaying every earlier push and pop.
    """
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.is_floating_point():
        raise ValueError(f"tokens must be an integer tensor [B, T], got {getattr(tokens, 'shape', type(tokens))}")
    B, T = tokens.shape
    out = torch.full((B, T), IGNORE, dtype=torch.long)
    for b in range(B):
        row = tokens[b].tolist()
        if cfg.task == "mqar":
            N = cfg.n_pairs
            table = {row[2 * i]: row[2 * i + 1] for i in range(N)}
            for t in range(2 * N, T):
                if row[t] in table:
                    out[b, t] = table[row[t]]
        elif cfg.task == "palindrome":
            sep = row.index(PALINDROME_SEP)  # data tokens are ≥ 2: the one separator
            for t in range(sep, T):
                out[b, t] = row[2 * sep - 1 - t]
        else:
            S = cfg.n_stacks
            stacks: list[list[int]] = [[] for _ in range(S)]
            for i in range(T // 2):
                op, x = row[2 * i], row[2 * i + 1]
                if 1 <= op <= S:
                    stacks[op - 1].append(x)
                elif op > S:
                    out[b, 2 * i] = stacks[op - 1 - S].pop()
    return out


# How each task here stands to the paper it comes from, shown under the task picker (the full comparison is in
# this module's docstring). The Kimi Linear report defines Palindrome, MQAR and Stack in §5.1, pp. 7–8.
KIMI_SIZES = " The report trains on 256–2,048 tokens for up to 20,000 steps; the runs here are far smaller."
TASK_SOURCES = {
    "mqar": "MQAR as Zoology generates it (Arora et al. 2023, arXiv 2312.04927, §3): the pairs, then every key asked "
    "once, at power-law distances; the DeltaNet paper (arXiv 2406.06484) trains on it too. The Kimi Linear report's "
    "MQAR (arXiv 2510.26692, §5.1, Figure 4b) is laid out otherwise in its example: the pairs, a separator, then the "
    "queried keys back to back. (Gated DeltaNet, arXiv 2412.06464, tests recall on RULER's needle tasks, S-NIAH, "
    "not on MQAR.)",
    "palindrome": "Palindrome as the Kimi Linear report defines it (arXiv 2510.26692, §5.1, Figure 4a): random tokens, "
    "a separator, then the same tokens reversed. One difference: here the separator's position is scored too (its "
    "answer is the token just before it), which the report's example leaves unscored — one easy position in every "
    "T/2." + KIMI_SIZES,
    "stack": "Stack as the Kimi Linear report defines it (arXiv 2510.26692, §5.1, Figure 4c), with two differences: "
    f"{TaskConfig('stack').n_stacks} stacks here against its 64, and two tokens per operation (the operation and the "
    "stack in one token, then the value) against its three (`<PUSH> 1 G`, `<POP> 0 E`). As there, every pop is "
    "scored: the answer is the value on top of that stack." + KIMI_SIZES,
}
