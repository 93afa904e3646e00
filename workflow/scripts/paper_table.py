"""Snakemake shim for rule paper_table: one paper table (Markdown in the paper's layout, long CSV),
written by its paper's module (fedbench.papers), and its HTML page and LaTeX table (from the Markdown)."""

import sys

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

from pathlib import Path  # noqa: E402

import fedbench.papers as papers  # noqa: E402
from fedbench.analysis.folder import read_metrics  # noqa: E402
from fedbench.analysis.tables import write_renderings  # noqa: E402

out = snakemake.output  # noqa: F821
papers.write_table(
    snakemake.params.paper,  # noqa: F821
    snakemake.wildcards.table,  # noqa: F821
    read_metrics(list(snakemake.input.metrics)),  # noqa: F821
    snakemake.input.reference,  # noqa: F821
    list(snakemake.params.cells),  # noqa: F821
    out.md,
    out.csv,
    snakemake.params.scales,  # noqa: F821
)
write_renderings(Path(out.md).read_text(encoding="utf-8"), out.html, out.tex, label=f"tab:{snakemake.wildcards.table}")  # noqa: F821
