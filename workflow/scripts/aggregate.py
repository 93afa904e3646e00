"""Snakemake shim for rule aggregate: one experiment's table (Markdown, CSV, HTML, LaTeX) and plots
(test accuracy vs round and vs cumulative uplink floats, train loss vs round)."""

import sys

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import polars as pl  # noqa: E402

from fedbench.analysis.plots import plot_accuracy, plot_accuracy_vs_uplink, plot_train_loss  # noqa: E402
from fedbench.analysis.tables import write_tables  # noqa: E402

out = snakemake.output  # noqa: F821
experiment = snakemake.wildcards.experiment  # noqa: F821
df = pl.read_parquet(snakemake.input.metrics).filter(pl.col("experiment") == experiment)  # noqa: F821
targets = dict(snakemake.params.targets)  # noqa: F821
tables = dict(snakemake.params.tables)  # noqa: F821
write_tables(df, out.md, out.csv, targets=targets, title=experiment, decimals=int(tables["decimals"]),
             interval=tables.get("interval", "sd"), html_path=out.html, tex_path=out.tex)
plot_accuracy(df, out.plot, targets=targets, title=experiment)
plot_accuracy_vs_uplink(df, out.uplink, targets=targets, title=experiment)
plot_train_loss(df, out.loss, title=experiment)
