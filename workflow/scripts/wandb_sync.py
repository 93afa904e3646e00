"""Snakemake shim for rule wandb_sync: upload the current cells' offline W&B runs (`wandb sync`)."""

import sys

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import json  # noqa: E402
from pathlib import Path  # noqa: E402

from fedbench.config import wandb_settings  # noqa: E402
from fedbench.wandb_log import sync_runs  # noqa: E402

records = [json.loads(Path(p).read_text()) for p in snakemake.input.records]  # noqa: F821
synced = sync_runs(records, wandb_settings(snakemake.config))  # noqa: F821
Path(snakemake.output[0]).write_text(json.dumps({"synced": synced, "runs": len(records)}, indent=2) + "\n")  # noqa: F821
print(f"synced {len(synced)} of {len(records)} runs")
