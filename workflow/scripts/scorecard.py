"""Snakemake shim for rule scorecard: the claims of every paper whose tables are in this folder,
decided on the folder's collected metrics and the papers' table CSVs (fedbench.papers.scorecard_inputs,
scorecard_rows), written as results/tables/scorecard.{md,html,csv} (fedbench.analysis.scorecard)."""

import sys

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import fedbench.papers as papers  # noqa: E402
from fedbench.analysis.folder import read_metrics  # noqa: E402
from fedbench.analysis.scorecard import scorecard_frame, write_scorecard  # noqa: E402

out = snakemake.output  # noqa: F821
inputs = papers.scorecard_inputs(read_metrics(snakemake.input.metrics), list(snakemake.input.tables))  # noqa: F821
frame = scorecard_frame(papers.scorecard_rows(inputs))
write_scorecard(frame, out.md, out.html, out.csv, names={k: papers.display_name(k) for k, *_ in inputs})
print(frame)
