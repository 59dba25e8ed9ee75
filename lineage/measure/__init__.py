"""Measurement: the benchmarks, the timer they share, the numerical verification, and the cost catalogue.

:mod:`~lineage.measure.bench` (each op's forms timed against each other), :mod:`~lineage.measure.bench_decode`
(decoding with a cache against a fixed state), :mod:`~lineage.measure.timing` (medians of interleaved repeats),
:mod:`~lineage.measure.verify` (every op in every form against its reference), :mod:`~lineage.measure.flops`
(the FLOPs an op's matrix products really compute, counted as it runs) and
:mod:`~lineage.measure.footprints` (the memory and parameter cost of real model configs, each with its source).
"""
