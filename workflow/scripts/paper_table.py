"""Snakemake shim for rule paper_table: one of the papers' tables (Markdown in the paper's layout, long CSV)."""

import sys

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import polars as pl  # noqa: E402

from fedbench.analysis.paper_tables import write_paper_table  # noqa: E402

write_paper_table(
    pl.read_parquet(snakemake.input.metrics),  # noqa: F821
    snakemake.input.reference,  # noqa: F821
    list(snakemake.params.cells),  # noqa: F821
    snakemake.wildcards.table,  # noqa: F821
    snakemake.output.md,  # noqa: F821
    snakemake.output.csv,  # noqa: F821
)
