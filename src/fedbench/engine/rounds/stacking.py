"""Which cells can be trained together in one job (stacking), and how to tell.

The round loop (:func:`fedbench.engine.rounds.loop.train_seeds`) trains several cells in lockstep: each
round the sampled clients of every cell form one set for the client engine
(:meth:`fedbench.engine.clients.vectorized.VectorizedClients.stacked`), while sampling, server update,
metrics, divergence and checkpoints stay per cell. That works when the cells' rounds have the
same *structure*: the same data tensors, model, step-state layout, number of local steps per
client and the same held-out split rule, so that one vectorized step can run every client of
every cell. What may differ is what only changes *values* inside a step:

Stackable differences (:func:`stack_key` ignores them)
    - ``seed`` (partition, initial model and every random draw are keyed by it per cell);
    - ``algorithm``, the cell's label (names it; the code is ``algorithm_name``, which must match);
    - ``local.lr``, ``local.lr_decay``, ``local.weight_decay``: numbers inside the SGD step;
    - ``local.lr_schedule`` (present or not, any milestones and factor): it only sets each round's
      lr value, which :meth:`fedbench.engine.spec.LocalWork.lr_at` computes per cell;
    - the *value* of ``local.clip_norm`` (a number inside the step); its None-ness must match,
      since clipping or not is a different step;
    - numeric (int or float, not bool) algorithm hyperparameters (``hparams``, the module's
      ``HPARAMS`` defaults filled in), unless the algorithm module lists them in
      ``STRUCTURAL_HPARAMS``;
    - runtime keys (``engine``, ``chunk_size``): they never change what a cell computes.

It reads training specs (:func:`fedbench.config.training_spec`: a cell without its report-only
keys); this module does not import the config, so that editing the config code reruns no cell.

Everything else must be equal, because it changes a round's structure: the batch size, epochs
or steps (how many local steps, over which batches), the model, sampling scheme and
participation, rounds and ``eval_every`` (the round schedule), dtype, dataset and partition id
(the data and clients; a swept partition parameter suffixes the partition id), the experiment,
``algorithm_name``, ``augmentation``, ``collapse``, ``delta_histogram``; None versus a number in
``clip_norm``; bool and str hyperparameters (they select code paths: Elastic Aggregation's
``sensitivity``); and the hyperparameters in ``STRUCTURAL_HPARAMS`` (Elastic Aggregation's
``sensitivity_fraction`` sets the size of the held-out split B_k, hence each client's training
rows and step count).

Inside the vectorized engine, a chunk whose cells share every hyperparameter value runs exactly
the single-cell code (Python numbers); a chunk that mixes values passes the differing ones to
``client_step`` / ``client_holdout_step`` as per-client 0-d tensors under ``vmap``
(:mod:`fedbench.engine.clients.vectorized`), which is why the algorithms read those hyperparameters
tensor-friendly (:mod:`fedbench.algorithms`). Results equal the cells run one at a time to
float rounding (``tests/engine/rounds/test_stacking.py``: 1e-10 relative in float64).
"""

from __future__ import annotations

import json

from fedbench.algorithms import get_algorithm
from fedbench.engine.rounds.cell import RUNTIME_KEYS
from fedbench.engine.spec import cell_name

#: Spec keys a stack key ignores outright (identity parts that may differ, runtime, report-only).
IGNORED_KEYS = ("seed", "algorithm", *RUNTIME_KEYS)
#: ``local`` keys whose values may differ (numbers inside the SGD step).
STACKABLE_LOCAL = ("lr", "lr_decay", "weight_decay")
#: ``local`` keys that may differ, even in presence (they only set a round's lr value, per cell).
IGNORED_LOCAL = ("lr_schedule",)
_ANY_NUMBER = "<number>"


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def structural_hparams(algorithm_name: str) -> tuple[str, ...]:
    """The algorithm module's ``STRUCTURAL_HPARAMS`` (numeric hyperparameters that change a
    round's structure), empty when it declares none."""
    return tuple(getattr(get_algorithm(algorithm_name), "STRUCTURAL_HPARAMS", ()))


def stack_view(spec: dict) -> dict:
    """The part of a training spec that must be equal for stacking, flat (``local.*`` and
    ``hparams.*`` as dotted keys), stackable values replaced by a placeholder.

    Raises:
        KeyError: unknown ``algorithm_name``.
    """
    algo = get_algorithm(spec["algorithm_name"])
    structural = set(getattr(algo, "STRUCTURAL_HPARAMS", ()))
    view = {k: v for k, v in spec.items() if k not in IGNORED_KEYS and k not in ("local", "hparams")}
    for k, v in (spec.get("local") or {}).items():
        if k in IGNORED_LOCAL:
            continue
        if k in STACKABLE_LOCAL and _is_number(v):
            v = _ANY_NUMBER
        elif k == "clip_norm" and _is_number(v):
            v = _ANY_NUMBER  # its value is stackable, not whether there is one
        view[f"local.{k}"] = v
    for k, v in {**getattr(algo, "HPARAMS", {}), **(spec.get("hparams") or {})}.items():
        view[f"hparams.{k}"] = _ANY_NUMBER if _is_number(v) and k not in structural else v
    return view


def stack_key(spec: dict) -> str:
    """A string equal for two training specs (:func:`fedbench.config.training_spec`) exactly when
    they can be trained in one job (the rule: module docstring).

    Raises:
        KeyError: unknown ``algorithm_name``.
    """
    return json.dumps(stack_view(spec), sort_keys=True, default=str)


def check_stackable(specs: list[dict]) -> None:
    """Raise ValueError unless ``specs`` can be trained in one job: equal :func:`stack_key`, and
    no cell given twice.

    Raises:
        ValueError: no specs; two specs differ in a structural key (the message names the keys,
            dotted, e.g. ``local.batch_size``, ``hparams.sensitivity_fraction``); or a cell name
            (experiment/dataset/partition/algorithm/seed) repeated.
    """
    if not specs:
        raise ValueError("train_seeds: no cell specs given")
    first = stack_view(specs[0])
    for spec in specs[1:]:
        other = stack_view(spec)
        diff = sorted(k for k in first.keys() | other.keys() if first.get(k, KeyError) != other.get(k, KeyError))
        if diff:
            raise ValueError(f"train_seeds: cells {cell_name(specs[0])} and {cell_name(spec)} differ in "
                             f"{', '.join(diff)}; only cells that differ in their seed, label, local lr, lr_decay, "
                             "lr_schedule, weight_decay, clip_norm value and numeric non-structural hyperparameters "
                             "can be stacked (fedbench.engine.rounds.stacking)")
    names = [cell_name(s) for s in specs]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"train_seeds: cell repeated: {', '.join(repeated)}; give each cell (and seed) once")
