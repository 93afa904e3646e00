"""Snakemake shim for rule wandb_log: fedbench.wandb_log.log_cell on one finished cell."""

import sys

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import json  # noqa: E402
import os  # noqa: E402
from pathlib import Path  # noqa: E402

# A wandb-core service of whatever process started Snakemake (e.g. a notebook) is not ours.
os.environ.pop("WANDB_SERVICE", None)

from fedbench.config import wandb_settings  # noqa: E402
from fedbench.files import atomic_write  # noqa: E402
from fedbench.wandb_log import log_cell  # noqa: E402

cfg = snakemake.config  # noqa: F821
summary = json.loads(Path(snakemake.input.summary).read_text())  # noqa: F821
record = log_cell(
    snakemake.input.metrics,  # noqa: F821
    snakemake.input.summary,  # noqa: F821
    wandb_settings(cfg),
    root="results/wandb",
    paper=snakemake.params.paper,  # noqa: F821
    code_version=summary.get("code_version"),
)
with atomic_write(snakemake.output.record) as tmp:  # noqa: F821
    tmp.write_text(json.dumps(record, indent=2) + "\n")
print(f"W&B run {record['id']} ({record['mode']}: {record['mode_reason']}) in {record['dir']}")
