"""Snakemake shim for rule prepare_dataset: fedbench.data.registry.prepare_dataset.

``data.mirror`` comes from the config at run time (where raw files are fetched from does not
change the dataset: files are checked against their registry checksums).
"""

import sys
from pathlib import Path

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

from fedbench.data.registry import prepare_dataset  # noqa: E402

prepare_dataset(
    snakemake.wildcards.dataset,  # noqa: F821
    dict(snakemake.params.cfg),  # noqa: F821
    Path(snakemake.output.meta).parent,  # noqa: F821
    mirror=(snakemake.config.get("data") or {}).get("mirror"),  # noqa: F821  (runtime only: not a param)
    progress=False,
)
