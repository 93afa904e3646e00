"""Check a workflow config and expand it into fully resolved training cells.

The config shape is documented key by key in ``config/README.md``. Its structure (keys, types,
ranges, defaults) is owned by one JSON schema, ``workflow/schemas/config.schema.yaml``;
:func:`validated` checks a config against it (the first error becomes a :class:`ConfigError`
naming the key path and what is allowed) and fills its defaults. The package then adds only what
a schema cannot check: names that must exist in the library's registries, the algorithms' own
hyperparameters and their ranges (each algorithm module's ``HPARAMS`` and ``BOUNDS``),
cross-references and the consistency of shared partition ids. Usable without Snakemake::

    from fedbench.config import check_config, expand_cells
    check_config(cfg)            # raises ConfigError naming the key path and the fix
    cells = expand_cells(cfg)    # one dict per (experiment, dataset, partition, algorithm, seed)

One module per job, each importing only the ones above it:

- :mod:`~fedbench.config.errors`: :class:`ConfigError` and how its messages write values;
- :mod:`~fedbench.config.registries`: the registries a config names entries of (lazily imported);
- :mod:`~fedbench.config.structure`: the JSON schema, :func:`validated`, :func:`typed_overrides`
  and :func:`load_yaml_strict`;
- :mod:`~fedbench.config.checks`: what the schema cannot check (registry entries resolved with
  their defaults and bounds, the algorithms' own checks, what the data allows);
- :mod:`~fedbench.config.settings`: a cell's settings merged across the levels (precedence);
- :mod:`~fedbench.config.sweeps`: sweep grids parsed, checked and laid out as points;
- :mod:`~fedbench.config.cells`: the expansion into cells, :func:`expand_cells` and :func:`training_spec`;
- :mod:`~fedbench.config.runtime`: the runtime-only blocks (resources, wandb, tables, stack);
- :mod:`~fedbench.config.workflow`: :func:`workflow_config`, what the workflow runs at parse time.

This package re-exports the public API of its modules: ``from fedbench.config import X`` as before.
"""

from __future__ import annotations

from fedbench.config.cells import (
    CELL_ID_PATTERN,
    PATH_KEYS,
    REPORT_KEYS,
    check_config,
    datasets,
    expand_cells,
    partitions,
    training_spec,
)
from fedbench.config.checks import BERNOULLI_SEED_LIMIT
from fedbench.config.errors import ConfigError
from fedbench.config.errors import _label_value as _label_value  # private helpers some tests call
from fedbench.config.runtime import (
    RESOURCE_DEFAULTS,
    TABLE_DEFAULTS,
    WANDB_DEFAULTS,
    job_resources,
    stacked_experiments,
    table_settings,
    train_resources,
    wandb_settings,
)
from fedbench.config.settings import LOCAL_DEFAULTS, LOCAL_OPTIONAL, SAMPLING_DEFAULTS
from fedbench.config.settings import _lr_schedule as _lr_schedule
from fedbench.config.structure import (
    ID_PATTERN,
    LOCAL_KEYS,
    SCHEMA_PATH,
    load_yaml_strict,
    schema,
    typed_overrides,
    validated,
)
from fedbench.config.sweeps import SELECT_DEFAULTS, select_metrics
from fedbench.config.workflow import workflow_config

__all__ = [
    "ConfigError", "validated", "typed_overrides", "load_yaml_strict", "check_config",
    "expand_cells", "training_spec", "datasets", "partitions",
    "train_resources", "job_resources", "stacked_experiments", "wandb_settings", "table_settings", "SCHEMA_PATH",
    "ID_PATTERN", "CELL_ID_PATTERN", "RESOURCE_DEFAULTS", "WANDB_DEFAULTS", "TABLE_DEFAULTS", "REPORT_KEYS",
    "SELECT_DEFAULTS", "select_metrics", "workflow_config",
    "schema", "PATH_KEYS", "LOCAL_KEYS", "LOCAL_DEFAULTS", "LOCAL_OPTIONAL", "SAMPLING_DEFAULTS",
    "BERNOULLI_SEED_LIMIT",
]
