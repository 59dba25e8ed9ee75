"""Teaching: what the pages run and say, built on the ops, the models and the measurements.

:mod:`~lineage.teach.story` / :mod:`~lineage.teach.story_text` (the story every stage page runs, and a class's own
written one), :mod:`~lineage.teach.stage_runs` (the stage pages' live runs), :mod:`~lineage.teach.claims` (each stage's
claim checked against the story), :mod:`~lineage.teach.ledger` (the article's numbers, each computed or sourced),
:mod:`~lineage.teach.equations` (the equations and the code panels cut from the ops' source) and
:mod:`~lineage.teach.real_size` (the mechanisms at a real model's sizes).
"""
