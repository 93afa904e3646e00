"""A cell's spec, resolved once: what the engine reads of a cell.

The config hands the engine a cell as a plain mapping, its *training spec*
(:func:`fedbench.config.training_spec`: JSON, as written to ``summary.json`` and hashed by
:func:`fedbench.engine.rounds.cell.spec_id` to name the cell's results). :meth:`CellSpec.of`
resolves that mapping once, at the top of the round loop (:func:`fedbench.engine.rounds.loop.train_seeds`),
into typed fields; from there on every module of the engine reads the fields:

- ``algorithm_name`` and ``hparams``: the round loop (the algorithm module), the cell
  (``server_init``) and the held-out split (:mod:`fedbench.engine.clients.holdout`);
- ``model``: :func:`fedbench.models.build_model`; a robust minimax model also sets the PGD radius;
- ``local`` (:class:`LocalWork`): the client engines (batch size, epochs or steps K, replacement)
  and each round's hyperparameters (:meth:`LocalWork.round_hparams`);
- ``scheme`` and ``participation``: the cell's client sampling (:mod:`fedbench.engine.clients.sampling`);
- ``augmentation``: the client engines (:meth:`CellSpec.augmentation_for`);
- ``engine`` and ``chunk_size``: which client engine runs step 2, and its chunking (runtime only);
- the rest: the round schedule, evaluation, and what each row records.

The mapping itself is kept as :attr:`CellSpec.record`: the cell's identity (``spec_id``), its
``summary.json`` and the stacking rule (:mod:`fedbench.engine.rounds.stacking`) read it as given,
so resolving it changes no name and no result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = ["LocalWork", "CellSpec", "FROM_DATASET", "schedule_label", "cell_name"]

#: ``CellSpec.augmentation`` of a spec without the key: the dataset's own record applies.
FROM_DATASET = "from dataset"


def cell_name(spec: Mapping) -> str:
    """experiment/dataset/partition/algorithm/seed=s: a cell's name in messages and in summary.json's
    ``stacked_cells``, from a training spec."""
    return f"{spec['experiment']}/{spec['dataset']}/{spec['partition']}/{spec['algorithm']}/seed={spec['seed']}"


def schedule_label(schedule: Mapping) -> str:
    """An ``lr_schedule`` in cell labels and sweep plots: ``step100-200x0.1`` (milestones, factor)."""
    return f"step{'-'.join(str(m) for m in schedule['milestones'])}x{schedule.get('factor', 0.1)!r}"


@dataclass(frozen=True)
class LocalWork:
    """A cell's local training: the config key ``local`` (docs: config/README.md).

    Attributes:
        batch_size: B, rows per local step.
        lr: η_l, the client learning rate of round 1.
        lr_decay: η_l is multiplied by it every round (1.0: constant).
        weight_decay: λ of the L2 term (λ/2)‖θ‖² in each local step.

    The schema gives every default (``workflow/schemas/config.schema.yaml``); None here means the
    key was not given, as for a client engine built alone (tests, benchmarks), which reads only
    the batch size and the amount of local work and gets each round's lr with the hyperparameters.
        clip_norm: the gradient-norm clip, or None (no clipping).
        epochs: local epochs per round: an int, a distribution (a mapping: drawn per client,
            :func:`fedbench.engine.clients.batches.local_work`), or None when ``steps`` is given.
        steps: local steps K per round, likewise; None when ``epochs`` is given.
        replacement: whether each step's rows are drawn with replacement (only with ``steps``).
        lr_schedule: ``{milestones, factor}`` step decay of the lr, or None.
    """

    batch_size: int
    epochs: int | Mapping | None = None
    steps: int | Mapping | None = None
    replacement: bool = False
    lr: float | None = None
    lr_decay: float | None = None
    weight_decay: float | None = None
    clip_norm: float | None = None
    lr_schedule: Mapping | None = None

    @classmethod
    def of(cls, local: Mapping | LocalWork) -> LocalWork:
        """The typed local work of a spec's ``local`` mapping (a :class:`LocalWork` is returned as
        it is).

        Raises:
            KeyError: ``batch_size`` missing.
        """
        if isinstance(local, LocalWork):
            return local
        return cls(batch_size=int(local["batch_size"]), epochs=local.get("epochs"), steps=local.get("steps"),
                   replacement=bool(local.get("replacement")), lr=local.get("lr"), lr_decay=local.get("lr_decay"),
                   weight_decay=local.get("weight_decay"), clip_norm=local.get("clip_norm"),
                   lr_schedule=local.get("lr_schedule"))

    @property
    def fixed_steps(self) -> int | None:
        """K when local work is one number of steps for every client (None: epochs, or drawn)."""
        return self.steps if isinstance(self.steps, int) and not isinstance(self.steps, bool) else None

    @property
    def drawn(self) -> bool:
        """Whether local work is drawn per client (``epochs`` or ``steps`` a distribution)."""
        return isinstance(self.steps, Mapping) or isinstance(self.epochs, Mapping)

    def lr_at(self, t: int) -> float:
        """The client learning rate η_l of round ``t`` (1-based): ``lr · lr_decay^(t−1) · factor^m``
        with m the number of ``lr_schedule.milestones`` strictly below t (no schedule: m = 0).
        Milestones [100, 200] with factor 0.1 give rounds 1–100 the lr, 101–200 lr/10 and from 201
        on lr/100: Sharma, Panda & Joshi (TMLR 2023), Table 3."""
        lr = self.lr * self.lr_decay ** (t - 1)
        if self.lr_schedule:
            lr *= self.lr_schedule["factor"] ** sum(1 for m in self.lr_schedule["milestones"] if t > m)
        return lr

    def round_hparams(self, hparams: Mapping, t: int) -> dict:
        """What the algorithm's functions get in round ``t`` (1-based): ``hparams`` plus ``lr``
        (:meth:`lr_at`), ``weight_decay``, ``clip_norm`` and ``local_steps`` (:attr:`fixed_steps`)."""
        return {**hparams, "lr": self.lr_at(t), "weight_decay": self.weight_decay, "clip_norm": self.clip_norm,
                "local_steps": self.fixed_steps}


@dataclass(frozen=True)
class CellSpec:
    """One cell, resolved (module docstring). Identity: ``experiment``, ``dataset``,
    ``partition``, ``algorithm`` (the label) and ``seed``.

    Attributes:
        algorithm_name: the algorithm module's name (:func:`fedbench.algorithms.get_algorithm`).
        hparams: the algorithm's hyperparameters as configured (read-only).
        model: the model record (``name`` and its options) for :func:`fedbench.models.build_model`.
        local: the local work (:class:`LocalWork`).
        scheme, participation: client sampling (``uniform`` or ``bernoulli``; the rate q ∈ (0, 1]).
        rounds, eval_every: T, and evaluate every this many rounds (and at T).
        eval_initial: also evaluate θ⁰ as the row of round 0.
        dtype: ``float32`` or ``float64``.
        augmentation: the augmentation record, None (off), or :data:`FROM_DATASET`.
        uplink_entropy: measure the uplink entropy columns (False: null columns, and rounds may fuse).
        delta_histogram_rounds: rounds whose Δ histograms are kept, or None.
        collapse: the spec's ``collapse`` value (:func:`fedbench.engine.rounds.cell.collapse_rule`).
        engine, chunk_size: the client engine and its chunk size, when the spec names them.
        record: the training spec as given.
    """

    experiment: str
    dataset: str
    partition: str
    algorithm: str
    seed: int
    algorithm_name: str
    hparams: Mapping[str, Any]
    model: Mapping[str, Any]
    local: LocalWork
    scheme: str
    participation: float
    rounds: int
    eval_every: int
    dtype: str
    eval_initial: bool = False
    augmentation: Mapping | str | None = FROM_DATASET
    uplink_entropy: bool = True
    delta_histogram_rounds: tuple[int, ...] | None = None
    collapse: Any = None
    engine: str | None = None
    chunk_size: int | str | None = None
    record: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, spec: Mapping | CellSpec) -> CellSpec:
        """Resolve a training spec (a :class:`CellSpec` is returned as it is).

        Raises:
            KeyError: a required key is missing (the config always writes them).
        """
        if isinstance(spec, CellSpec):
            return spec
        sampling = spec["sampling"]
        hist = spec.get("delta_histogram")
        return cls(
            experiment=spec["experiment"], dataset=spec["dataset"], partition=spec["partition"],
            algorithm=spec["algorithm"], seed=int(spec["seed"]), algorithm_name=spec["algorithm_name"],
            hparams=MappingProxyType(dict(spec["hparams"])), model=spec["model"], local=LocalWork.of(spec["local"]),
            scheme=sampling["scheme"], participation=sampling["participation"], rounds=int(spec["rounds"]),
            eval_every=int(spec["eval_every"]), dtype=spec["dtype"], eval_initial=bool(spec.get("eval_initial")),
            augmentation=spec["augmentation"] if "augmentation" in spec else FROM_DATASET,
            uplink_entropy=spec.get("uplink_entropy") is not False,
            delta_histogram_rounds=None if hist is None else tuple(hist["rounds"]),
            collapse=spec.get("collapse"), engine=spec.get("engine"), chunk_size=spec.get("chunk_size"),
            record=dict(spec),
        )

    @property
    def name(self) -> str:
        """experiment/dataset/partition/algorithm/seed=s: the cell's name in messages."""
        return cell_name(self.record)

    @property
    def pgd_radius(self) -> float | None:
        """The radius r of the L2 PGD attack of ``test_pgd_accuracy`` for a robust minimax cell
        (the ``radius`` hyperparameter, default 1.0); None otherwise (not measured)."""
        minimax = (self.model or {}).get("minimax") or {}
        return float(self.hparams.get("radius", 1.0)) if minimax.get("problem") == "robust" else None

    def augmentation_for(self, dataset_meta: Mapping) -> Mapping | None:
        """The augmentation record the cell trains with: its own when the spec has the key (None:
        off), else the dataset's ``meta["augmentation"]`` (None when absent)."""
        return dataset_meta.get("augmentation") if self.augmentation == FROM_DATASET else self.augmentation

    def round_hparams(self, t: int) -> dict:
        """The algorithm's hyperparameters in round ``t`` (:meth:`LocalWork.round_hparams`)."""
        return self.local.round_hparams(self.hparams, t)
