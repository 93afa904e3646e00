"""Snakemake shim for rule wandb_report: build and save the W&B comparison report (needs the network)."""

import sys

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import json  # noqa: E402
from pathlib import Path  # noqa: E402

from fedbench.config import wandb_settings  # noqa: E402
from fedbench.wandb_log import build_report, report_sections  # noqa: E402

cfg = snakemake.config  # noqa: F821
settings = wandb_settings(cfg)
entity = settings["entity"]
if entity is None:
    import wandb

    entity = wandb.Api().default_entity
tables = {Path(p).stem: Path(p).read_text() for p in snakemake.input.tables}  # noqa: F821
sections = report_sections(snakemake.params.cells, tables)  # noqa: F821
report = build_report(sections, entity=entity, project=settings["project"])
report.save()
Path(snakemake.output[0]).write_text(json.dumps({"url": report.url, "entity": entity,  # noqa: F821
                                                 "project": settings["project"]}, indent=2) + "\n")
print(f"W&B report: {report.url}")
