"""Snakemake shim for rule paper_figure: one paper figure, written by its paper's module
(fedbench.papers) from the metrics or from per-cell files (whichever the figure reads)."""

import sys

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import fedbench.papers as papers

inputs = snakemake.input  # noqa: F821
papers.get(snakemake.params.paper).write_figure(  # noqa: F821
    snakemake.wildcards.figure,  # noqa: F821
    list(snakemake.params.cells),  # noqa: F821
    snakemake.output.plot,  # noqa: F821
    metrics=getattr(inputs, "metrics", None),
    files=list(getattr(inputs, "files", [])),
)
