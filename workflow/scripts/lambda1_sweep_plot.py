"""Snakemake shim for rule lambda1_sweep_plot: FedElasticNet's λ1 sweep (Figures 3-5)."""

import sys

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import polars as pl  # noqa: E402

from fedbench.analysis.sweep_plots import plot_lambda1_sweep  # noqa: E402

cells = [{**c, "hparams": {"lambda1": c["lambda1"]}} for c in snakemake.params.cells]  # noqa: F821
plot_lambda1_sweep(pl.read_parquet(snakemake.input.metrics), cells, snakemake.output.plot)  # noqa: F821
