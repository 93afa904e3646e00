"""Snakemake shim for rule partition: fedbench.data.partition + the class-count heat map."""

import sys
from pathlib import Path

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

from fedbench.analysis.partition_plots import plot_class_counts  # noqa: E402
from fedbench.data.errors import DamagedFileError  # noqa: E402
from fedbench.data.partition import class_counts, make_partition, write_partition  # noqa: E402
from fedbench.data.store import load_dataset  # noqa: E402
from fedbench.runlog import ends_with_message  # noqa: E402

out = snakemake.output  # noqa: F821
with ends_with_message(DamagedFileError, what="partition"):  # a damaged dataset file: named, with its fix
    dataset = load_dataset(Path(snakemake.input.meta).parent)  # noqa: F821
table = make_partition(dataset, dict(snakemake.params.cfg), int(snakemake.wildcards.seed))  # noqa: F821
write_partition(table, dataset, Path(out.partition).parent)
counts = class_counts(table, dataset)
plot_class_counts(counts, out.heatmap)
for path in (out.partition, out.counts, out.heatmap):
    if not Path(path).exists():
        raise FileNotFoundError(f"partition step did not write {path}")
