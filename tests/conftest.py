"""Test-wide settings, and the small runs every figure builder of tests/util.py's catalogue is fed."""

import os

import pytest
import torch

# The tests use small tensors; on a shared 2-core box torch's thread pool only adds contention.
torch.set_num_threads(int(os.environ.get("LINEAGE_TEST_THREADS", "1")))


@pytest.fixture(scope="module")
def runs():
    """One small run of every kind the figure builders draw (tests.util.all_builders)."""
    from lineage import lab  # here, not above: only the figure tests pay for these imports
    from lineage.teach import real_size, stage_runs

    lab_settings = lab.LabSettings(d_k=8, keys="random", noise=0.0, seed=0)
    return dict(
        softmax=stage_runs.run_softmax(T=12, n_heads=2, head_dim=4, block_size=4),
        linear=stage_runs.run_stage("linear_attention", 10, 4, 5, 0, repeats=1),
        delta=stage_runs.run_stage("deltanet", 10, 4, 5, 0, repeats=1),
        mamba2=stage_runs.run_stage("mamba2", 10, 4, 5, 0, stage_runs.GateRule(alpha=0.9, alpha_jitter=1.0), repeats=1),
        kda=stage_runs.run_stage("kda", 10, 4, 5, 0, stage_runs.GateRule(alpha=0.99, alpha_min=0.5), repeats=1),
        sweep=stage_runs.chunk_size_sweep(16, 4, 0, repeats=1),
        overwrite=lab.overwrite(lab_settings, lab.OVERWRITE_GATES, n_between=2),
        capacity=lab.capacity(lab_settings, lab.CAPACITY_GATES, n_max=12, trials=1),
        topic=lab.topic_switch(lab_settings, lab.TOPIC_GATES, n_a=6, n_b=4),
        retention=lab.retention(lab_settings, lab.RETENTION_GATES, n_long=2, n_short=6),
        needle=lab.needle(lab_settings, lab.RETENTION_GATES, n_fill=8),
        scale=real_size.run_at_scale("kda", 64, 4, 2, chunk_size=8, max_points=6, repeats=1),
    )
