"""Snakemake shim for rule paper_table: one paper table (Markdown in the paper's layout, long CSV),
written by its paper's module (fedbench.papers)."""

import sys

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import polars as pl

import fedbench.papers as papers

papers.get(snakemake.params.paper).write_table(  # noqa: F821
    snakemake.wildcards.table,  # noqa: F821
    pl.read_parquet(snakemake.input.metrics),  # noqa: F821
    snakemake.input.reference,  # noqa: F821
    list(snakemake.params.cells),  # noqa: F821
    snakemake.output.md,  # noqa: F821
    snakemake.output.csv,  # noqa: F821
)
