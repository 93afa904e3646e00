"""Where the workflow keeps each file of a results folder: one owner for every path.

A researcher runs many config files in one folder. A prepared dataset, a partition and an F*
are identified by what they are, not only by the id a config gives them: their directory is the
readable id followed by a digest of their resolved parameters, so two configs that use one id for
different data write different directories and never overwrite each other's inputs, and
switching between the configs prepares or partitions nothing again.

=========================================================  =====================================
path                                                       what
=========================================================  =====================================
resources/datasets/<id>-<d>/                               a prepared dataset; d = digest of
                                                           its resolved {source, **params}
results/partitions/<id>-<d>/<partition>-<p>/seed=<s>/      a partition of that dataset; p =
                                                           digest of {scheme, **params}
results/optimum/<id>-<d>/l2=<λ>.json                       F* of that dataset's ℓ2-logistic loss
results/runs/<experiment>/<id>/<partition>/<alg>/seed=<s>/ one cell (its experiment names it)
results/metrics/<experiment>.parquet                       one experiment's collected cells
results/metrics.parquet                                    every experiment in the folder
=========================================================  =====================================

A cell's directory carries no digest: an experiment is the researcher's own namespace, and an
edited experiment reruns exactly its cells whose spec, data or code changed (docs/reruns.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

#: The digest's length in hex digits (32 bits: a clash needs ~65,000 definitions of one id).
DIGEST_LENGTH = 8
#: Wildcard pattern of a digest.
DIGEST_PATTERN = f"[0-9a-f]{{{DIGEST_LENGTH}}}"

DATASETS_ROOT = "resources/datasets"
PARTITIONS_ROOT = "results/partitions"
RUNS_ROOT = "results/runs"
EXPERIMENT_METRICS = "results/metrics/{experiment}.parquet"
FOLDER_METRICS = "results/metrics.parquet"


def digest(params: Mapping) -> str:
    """A short hex digest of resolved parameters (canonical JSON: sorted keys).

    Args:
        params: a resolved dataset ({source, **params}) or partition ({scheme, **params}) config,
            as fedbench.config resolves it (defaults filled, values typed).

    Returns:
        :data:`DIGEST_LENGTH` lowercase hex digits.
    """
    text = json.dumps(params, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_LENGTH]


def dataset_key(dataset_id: str, params: Mapping) -> str:
    """``<id>-<digest>``: the directory name of a prepared dataset."""
    return f"{dataset_id}-{digest(params)}"


def dataset_dir(dataset_id: str, params: Mapping) -> str:
    """``resources/datasets/<id>-<digest>``: where a dataset of these parameters is prepared."""
    return f"{DATASETS_ROOT}/{dataset_key(dataset_id, params)}"


def partition_key(partition_id: str, params: Mapping) -> str:
    """``<partition id>-<digest>``: the directory name of a partition of these parameters."""
    return f"{partition_id}-{digest(params)}"


def partition_dir(dataset_id: str, dataset_params: Mapping, partition_id: str, partition_params: Mapping,
                  seed: int | str) -> str:
    """``results/partitions/<id>-<d>/<partition>-<p>/seed=<s>``: one partition of one prepared dataset."""
    return (f"{PARTITIONS_ROOT}/{dataset_key(dataset_id, dataset_params)}/"
            f"{partition_key(partition_id, partition_params)}/seed={seed}")


def experiment_metrics(experiment: str) -> str:
    """``results/metrics/<experiment>.parquet``: one experiment's collected metrics."""
    return EXPERIMENT_METRICS.format(experiment=experiment)
