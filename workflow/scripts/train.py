"""Snakemake shim for rule train: fedbench.engine.loop.run_cell on one cell.

The device, engine and chunk_size come from the config at run time: they are not params,
since they change how a cell runs, not its result. stdout/stderr go to the job's log file.
"""

import sys
from pathlib import Path

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

from fedbench.engine.loop import run_cell  # noqa: E402

run_cell(
    dict(snakemake.params.spec),  # noqa: F821
    Path(snakemake.input.meta).parent,  # noqa: F821
    snakemake.input.partition,  # noqa: F821
    snakemake.output.metrics,  # noqa: F821
    snakemake.output.summary,  # noqa: F821
    device=snakemake.config.get("device", "auto"),  # noqa: F821
    engine=snakemake.config.get("engine"),  # noqa: F821
    chunk_size=snakemake.config.get("chunk_size"),  # noqa: F821
    num_threads=snakemake.threads,  # noqa: F821
    progress=False,  # a tqdm bar redrawn per round floods the log file; run_cell prints a summary line
)
