"""Snakemake shim for rule collect: fedbench.analysis.collect.collect."""

import sys

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

from fedbench.analysis.collect import collect  # noqa: E402

df = collect(list(snakemake.input), snakemake.output[0])  # noqa: F821
print(f"collected {df.height} rows from {len(snakemake.input)} cells into {snakemake.output[0]}")  # noqa: F821
