"""Snakemake shim for rule boosted_plot: Elastic Aggregation's Figure 1 (boosted % vs round)."""

import sys

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import polars as pl  # noqa: E402

from fedbench.analysis.paper_figures import plot_boosted  # noqa: E402

plot_boosted(pl.read_parquet(snakemake.input.metrics), list(snakemake.params.cells),  # noqa: F821
             snakemake.output.plot)  # noqa: F821
