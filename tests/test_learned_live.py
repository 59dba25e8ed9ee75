"""The Learned memory page's default live run can succeed: each default mixer reaches the target within the default
step budget, on one CPU thread, with the page's own settings (lineage.train.loop.LIVE_*; the measured times are there).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from lineage.train.loop import LIVE_MIXERS, LIVE_MODEL, LIVE_TASK, LIVE_TRAINING, train


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("mixer", LIVE_MIXERS)
def test_each_default_mixer_reaches_the_target_within_the_default_steps(mixer):
    cfg = replace(LIVE_TRAINING, max_seconds=3600.0)  # the steps decide here, not the machine's load
    result = train(LIVE_TASK, replace(LIVE_MODEL, mixer=mixer), cfg, seed=0)
    assert result.stopped == "target", f"{mixer}: {result.accuracy:.3f} after {result.steps} steps"
    assert result.steps <= LIVE_TRAINING.max_steps
