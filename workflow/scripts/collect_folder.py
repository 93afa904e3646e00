"""Snakemake shim for rule collect_folder: results/metrics.parquet from every experiment collected
in the folder (fedbench.analysis.folder.combine_experiments)."""

import sys

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

from fedbench.analysis.folder import combine_experiments  # noqa: E402

paths = list(snakemake.input)  # noqa: F821
df = combine_experiments(paths, snakemake.output[0])  # noqa: F821
experiments = df.get_column("experiment").unique(maintain_order=True).to_list()
print(f"{df.height} rows of {len(experiments)} experiments ({', '.join(experiments)}) into {snakemake.output[0]}")  # noqa: F821
