"""Training: the synthetic tasks, the loop, the sweep that runs a grid of training points, and what the record says.

:mod:`~lineage.train.tasks` (MQAR and friends, generated in process), :mod:`~lineage.train.loop` (one model trained
to a target or a budget), :mod:`~lineage.train.sweep` (a grid of independent points on a process pool or Ray,
appended to one results file) and :mod:`~lineage.train.findings` (the sentences the Learned memory page states,
each computed from that file).
"""
