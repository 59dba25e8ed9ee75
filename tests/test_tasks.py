"""The synthetic tasks: answers determined by the context, seeds that reproduce, the layout each task promises."""

from __future__ import annotations

import pytest
import torch

from lineage.train.tasks import IGNORE, PALINDROME_SEP, TASKS, TaskConfig, answers_by_lookup, make_batch

CONFIGS = {
    "mqar-V32-T32-N4": TaskConfig("mqar", vocab_size=32, seq_len=32, n_pairs=4),
    "mqar-V64-T64-N16": TaskConfig("mqar", vocab_size=64, seq_len=64, n_pairs=16),
    "palindrome-V16-T24": TaskConfig("palindrome", vocab_size=16, seq_len=24),
    "stack-V24-T40-S3": TaskConfig("stack", vocab_size=24, seq_len=40, n_stacks=3),
}


@pytest.mark.parametrize("cfg", CONFIGS.values(), ids=CONFIGS.keys())
def test_every_answer_is_recovered_from_the_sequence_by_lookup(cfg):
    batch = make_batch(cfg, 64, seed := 3)
    assert batch.tokens.shape == batch.targets.shape == (64, cfg.seq_len)
    assert batch.scored.any(dim=1).all(), f"every sequence has a scored position (seed {seed})"
    assert torch.equal(answers_by_lookup(cfg, batch.tokens), batch.targets)


@pytest.mark.parametrize("cfg", CONFIGS.values(), ids=CONFIGS.keys())
def test_the_same_seed_gives_the_same_batches_and_another_seed_others(cfg):
    a, b, c = make_batch(cfg, 16, 7), make_batch(cfg, 16, 7), make_batch(cfg, 16, 8)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.targets, b.targets)
    assert not torch.equal(a.tokens, c.tokens)
    # a generator carries on where it was: two draws from one stream equal two fresh draws of the same stream
    gen, again = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    first, second = make_batch(cfg, 4, gen), make_batch(cfg, 4, gen)
    assert torch.equal(first.tokens, make_batch(cfg, 4, again).tokens)
    assert torch.equal(second.tokens, make_batch(cfg, 4, again).tokens)
    assert not torch.equal(first.tokens, second.tokens)


def test_mqar_layout_follows_zoology():
    cfg = CONFIGS["mqar-V64-T64-N16"]
    batch = make_batch(cfg, 256, 0)
    N, half = cfg.n_pairs, cfg.vocab_size // 2
    keys, values = batch.tokens[:, 0 : 2 * N : 2], batch.tokens[:, 1 : 2 * N : 2]
    assert ((keys >= 1) & (keys < half)).all() and ((values >= half) & (values < cfg.vocab_size)).all()
    assert all(len(set(row.tolist())) == N for row in keys), "keys are distinct within a sequence"
    assert (batch.scored.sum(1) == N).all(), "each key is queried exactly once"
    assert not batch.scored[:, : 2 * N].any(), "nothing inside the pairs is scored"
    query_pos = batch.scored.nonzero()[:, 1]
    assert ((query_pos - 2 * N) % 2 == 0).all(), "queries sit at even offsets after the pairs"
    # Zoology's power law puts most queries right after the pairs: the first slot is the most used one
    slot_counts = torch.bincount((query_pos - 2 * N) // 2)
    assert slot_counts[0] == slot_counts.max()


def test_palindrome_second_half_mirrors_the_first():
    cfg = CONFIGS["palindrome-V16-T24"]
    batch = make_batch(cfg, 8, 1)
    L = cfg.seq_len // 2
    assert (batch.tokens[:, L] == PALINDROME_SEP).all()
    assert torch.equal(batch.targets[:, L:], batch.tokens[:, :L].flip(1))
    assert (batch.targets[:, :L] == IGNORE).all()


def test_stack_scores_every_pop_and_only_pops():
    cfg = CONFIGS["stack-V24-T40-S3"]
    batch = make_batch(cfg, 32, 2)
    ops = batch.tokens[:, 0::2]
    pops = ops > cfg.n_stacks
    assert torch.equal(batch.scored[:, 0::2], pops) and not batch.scored[:, 1::2].any()
    assert pops.any() and (~pops).any(), "both pushes and pops occur"
    # the popped value is written after the POP token, so the sequence reads as a log of the stacks
    assert torch.equal(batch.targets[:, 0::2][pops], batch.tokens[:, 1::2][pops])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(task="copy"), "task must be one of 'mqar', 'palindrome', 'stack'"),
        (dict(task="mqar", seq_len=32, n_pairs=9), "seq_len ≥ 36"),
        (dict(task="mqar", vocab_size=16, seq_len=64, n_pairs=8), "n_pairs = 8 needs vocab_size ≥ 18, got 16"),
        (dict(task="mqar", vocab_size=1, seq_len=64, n_pairs=8), "n_pairs = 8 needs vocab_size ≥ 18, got 1"),
        (dict(task="mqar", seq_len=33), "seq_len must be even"),
        (dict(task="stack", vocab_size=8, n_stacks=3), "vocab_size ≥ 2·n_stacks \\+ 3"),
        (dict(task="palindrome", vocab_size=3), "vocab_size ≥ 4"),
    ],
)
def test_bad_configs_say_what_is_allowed(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TaskConfig(**kwargs)


def test_every_task_is_listed_and_has_a_chance_level():
    for task in TASKS:
        cfg = TaskConfig(task)
        assert 0 < cfg.chance < 0.5
