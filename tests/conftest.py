"""Test-wide settings."""

import os

import torch

# The tests use small tensors; on a shared 2-core box torch's thread pool only adds contention.
torch.set_num_threads(int(os.environ.get("LINEAGE_TEST_THREADS", "1")))
