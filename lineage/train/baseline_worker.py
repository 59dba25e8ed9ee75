"""A training step of another checkout of the package, on request: the baseline of ``python -m lineage train
--throughput --baseline DIR`` (:func:`lineage.train.loop.baseline_steps` starts it and times its steps).

Run as a script, ``PYTHONPATH=DIR python baseline_worker.py DIR SPEC``: it imports ``lineage`` from DIR (not from the
tree that holds this file, nor the installed one: PYTHONPATH comes before both), builds the model, optimiser and
batch SPEC describes (JSON: task, model, train, threads) with DIR's own code, runs one untimed step, prints ``ready``
and the path it imported, and then runs one training step (``lineage.train.loop.train_step``) for every line read
from stdin, answering ``done`` after each.
"""

from __future__ import annotations

import json
import sys


def main(spec: dict) -> None:
    import torch

    torch.set_num_threads(spec["threads"])
    import lineage
    from lineage.models.lm import LM, LMConfig
    from lineage.train.loop import TrainConfig, optimiser, train_step
    from lineage.train.tasks import TaskConfig, make_batch

    model = LM(LMConfig(**spec["model"]), 0)
    opt, sched = optimiser(model, TrainConfig(**spec["train"]))
    batch = make_batch(TaskConfig(**spec["task"]), spec["train"]["batch_size"], 0)
    train_step(model, opt, sched, batch.tokens, batch.targets)
    print("ready", lineage.__file__, flush=True)
    for _ in sys.stdin:
        train_step(model, opt, sched, batch.tokens, batch.targets)
        print("done", flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[2]))  # argv[1], DIR, is first on PYTHONPATH (baseline_steps sets it), so its package loads
