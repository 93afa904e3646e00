"""Snakemake shim for rule sweep_select: one experiment's sweep selection (Markdown, CSV) and its
sensitivity plot (fedbench.analysis.sweeps), and the table's HTML page (for the report)."""

import sys
from pathlib import Path

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import polars as pl  # noqa: E402

from fedbench.analysis.sweeps import sensitivity_plot, write_selection  # noqa: E402
from fedbench.analysis.tables import write_renderings  # noqa: E402

out = snakemake.output  # noqa: F821
experiment = snakemake.wildcards.experiment  # noqa: F821
cells = list(snakemake.params.cells)  # noqa: F821
tables = dict(snakemake.params.tables)  # noqa: F821
df = pl.read_parquet(snakemake.input.metrics).filter(pl.col("experiment") == experiment)  # noqa: F821
selection = write_selection(df, cells, out.md, out.csv, title=experiment, decimals=int(tables["decimals"]),
                            interval=tables.get("interval", "sd"))
write_renderings(Path(out.md).read_text(encoding="utf-8"), out.html)
sensitivity_plot(df, cells, out.plot, selection=selection, title=experiment)
print(selection)
