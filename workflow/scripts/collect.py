"""Snakemake shim for rule collect: fedbench.analysis.collect.collect, one experiment's cells into
results/metrics/<experiment>.parquet. A cell file that cannot be read ends the job with collect's
message alone (the files, what is wrong, the fix; those cells are set aside to retrain)."""

import sys

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

from fedbench.analysis.collect import collect  # noqa: E402
from fedbench.data.errors import DamagedFileError  # noqa: E402
from fedbench.metrics.optimum import read_optimum  # noqa: E402
from fedbench.runlog import ends_with_message  # noqa: E402

files = {path: read_optimum(path).value for _, path in snakemake.params.optima}  # noqa: F821
optima = {tuple(key): files[path] for key, path in snakemake.params.optima}  # noqa: F821
with ends_with_message(DamagedFileError, what="collect"):
    df = collect(list(snakemake.input.metrics), snakemake.output[0], optima=optima)  # noqa: F821
print(f"collected {df.height} rows from {len(snakemake.input.metrics)} cells into {snakemake.output[0]}"  # noqa: F821
      + (f"; suboptimality against F* of {len(files)} (dataset, lambda)" if files else ""))
