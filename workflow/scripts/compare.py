"""Snakemake shim for rule compare: final test accuracy per algorithm across all experiments."""

import sys

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import polars as pl  # noqa: E402

from fedbench.analysis.plots import plot_comparison  # noqa: E402

plot_comparison(pl.read_parquet(snakemake.input.metrics), snakemake.output.plot)  # noqa: F821
