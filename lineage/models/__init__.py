"""The models: ``nn.Module`` layers built from the ops and the table of mechanisms.

:mod:`~lineage.models.layers` (one linear-memory mixer for every mechanism), :mod:`~lineage.models.mla` (multi-head
latent attention), :mod:`~lineage.models.hybrid` (the Kimi Linear / K3 layer stack) and :mod:`~lineage.models.lm`
(the small language model the trainer uses). Models read layer schedules from :mod:`lineage.schedules`, never from
the cost catalogue.
"""
