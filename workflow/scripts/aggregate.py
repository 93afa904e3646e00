"""Snakemake shim for rule aggregate: one experiment's table (Markdown, CSV) and accuracy plot."""

import sys

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import polars as pl  # noqa: E402

from fedbench.analysis.plots import plot_accuracy  # noqa: E402
from fedbench.analysis.tables import write_tables  # noqa: E402

experiment = snakemake.wildcards.experiment  # noqa: F821
df = pl.read_parquet(snakemake.input.metrics).filter(pl.col("experiment") == experiment)  # noqa: F821
targets = dict(snakemake.params.targets)  # noqa: F821
write_tables(df, snakemake.output.md, snakemake.output.csv, targets=targets, title=experiment,  # noqa: F821
             decimals=int(snakemake.params.tables["decimals"]))  # noqa: F821
plot_accuracy(df, snakemake.output.plot, targets=targets, title=experiment)  # noqa: F821
