"""Snakemake shim for rule optimum: fedbench.metrics.optimum.solve_optimum on a prepared dataset's
training split, written with write_optimum."""

import sys
import time
from pathlib import Path

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

from fedbench.data.errors import DamagedFileError  # noqa: E402
from fedbench.data.store import load_dataset  # noqa: E402
from fedbench.metrics.optimum import solve_optimum, write_optimum  # noqa: E402
from fedbench.runlog import ends_with_message  # noqa: E402

with ends_with_message(DamagedFileError, what="optimum"):  # a damaged dataset file: named, with its fix
    ds = load_dataset(Path(snakemake.input.meta).parent)  # noqa: F821
lam = snakemake.params.lam  # noqa: F821
t0 = time.perf_counter()
result = solve_optimum(ds.x_train.reshape(len(ds.y_train), -1), ds.y_train, lam)
write_optimum(result, snakemake.output.json)  # noqa: F821
print(f"{ds.name} (N={result.n}, D={result.d}) lam={lam!r}: F* = {result.value!r}, ||grad F|| = "
      f"{result.grad_norm:.2e} in {time.perf_counter() - t0:.1f} s ({result.method})")
