"""Attention Lineage core (work in progress: exports are filled in as modules land)."""
