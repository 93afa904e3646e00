"""Cost before launch: each experiment's training jobs and their estimated CPU (or GPU) time.

A cell's work is counted in **sample-steps**: the samples its clients' local steps process over the
run, rounds × E[clients per round] × local steps per client × batch size, with a client's local
steps ``local.steps`` or ``local.epochs`` · ⌈n_i / B⌉ at the mean client size n_i = n_train / N.
Its time is its work times a **rate** (seconds per sample-step) of its (model, engine, device,
stacked) key, plus, per job, the process's start-up (Python, torch, the data). A rate falls with a
cell's size, as its fixed costs (rounds, evaluations) spread over more steps and the engines
vectorize across more clients: a key holds points (sample-steps, rate), one per half-decade of
sizes measured, and a cell's rate is read off them log-log (:func:`rate_at`). The rates are:

- **learned** from the folder: every finished cell of the current config records its training
  time (``wall_seconds`` in summary.json; a stacked group's cells share one) and its spec, whence
  its work; a point is the median over the key's cells of one half-decade of sizes;
- else **shipped**: :data:`RATES_PATH`, learned the same way from the shipped quick files and the
  default suite on a 2-core CPU (``python benchmarks/cost_rates.py <folder>``, the date, machine
  and command inside);
- else a guess, flagged: for a GPU (``cuda``) key the same model's CPU rate (no GPU rates are
  shipped; a config's finished ``cuda`` cells teach it its own), else the slowest shipped rate.

A job whose estimate exceeds its ``runtime`` is flagged with the key to set; a train job whose
config sets no ``runtime`` asks for :func:`auto_runtime` of its estimate.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: The shipped rates (package data): {"rates": {key: [[sample-steps, seconds per sample-step], ...]},
#: "job_startup_s", the date, machine and command that measured them}.
RATES_PATH = Path(__file__).with_name("cost_rates.json")
#: A train job's runtime when the config sets none: the estimate times this margin...
RUNTIME_MARGIN = 3.0
#: ...and never less than this many minutes (the estimate is rough at small scales).
MIN_RUNTIME = 30


def _mean_amount(v) -> float | None:
    """An int count, or the mean of a ``{"low", "high"}`` distribution (fedbench.config.settings._local_work)."""
    if v is None:
        return None
    if isinstance(v, Mapping):
        return (float(v["low"]) + float(v["high"])) / 2
    return float(v)


def sample_steps(cell: Mapping, n_train: int, num_clients: int) -> float:
    """The samples a cell's local steps process over its run (see the module docstring).

    Args:
        cell: a resolved cell (fedbench.config.expand_cells): ``rounds``, ``sampling``
            (``participation``), ``local`` (``steps`` or ``epochs``, ``batch_size``).
        n_train: the dataset's training samples.
        num_clients: N, the partition's clients.

    Returns:
        rounds × max(1, participation · N) × local steps × batch size.
    """
    batch = max(1, int(cell["local"].get("batch_size") or 1))
    per_client = n_train / max(1, num_clients)
    steps = _mean_amount(cell["local"].get("steps"))
    if steps is None:
        steps = (_mean_amount(cell["local"].get("epochs")) or 1.0) * math.ceil(per_client / batch)
    clients = max(1.0, float(cell["sampling"].get("participation", 1.0)) * num_clients)
    return float(cell["rounds"]) * clients * steps * batch


def client_sizes(cells: Iterable[Mapping], datasets: Mapping[str, dict], partitions: Mapping[tuple, dict],
                 root: str | Path = ".") -> dict[tuple[str, str], tuple[int, int] | None]:
    """(n_train, N) per (dataset, partition) of ``cells``, the inputs of :func:`sample_steps`.

    n_train is the prepared dataset's (``<root>/<dataset_dir>/meta.json``), else what the source's
    parameters give before it is prepared (fedbench.data.registry.train_size); N is the partition's
    ``num_clients``, else the source's natural clients. None where either is unknown.

    Args:
        cells: resolved cells (``dataset``, ``partition``, ``dataset_dir``).
        datasets: {dataset id: resolved {source, **params}} (fedbench.config.datasets).
        partitions: {(dataset id, partition id): resolved {scheme, **params}} (fedbench.config.partitions).
        root: the folder the cells' directories are relative to.
    """
    from fedbench.data.registry import natural_client_count, train_size

    out: dict[tuple[str, str], tuple[int, int] | None] = {}
    for c in cells:
        key = (c["dataset"], c["partition"])
        if key in out:
            continue
        source = datasets[c["dataset"]]["source"]
        params = {k: v for k, v in datasets[c["dataset"]].items() if k != "source"}
        try:
            n_train = json.loads((Path(root) / c["dataset_dir"] / "meta.json").read_text())["n_train"]
        except (OSError, ValueError, KeyError):
            try:
                n_train = train_size(source, params)
            except ValueError:
                n_train = None
        clients = partitions[key].get("num_clients") or natural_client_count(source, params)
        out[key] = (n_train, clients) if n_train and clients else None
    return out


def rate_key(model: str, engine: str, device: str, stacked: bool) -> str:
    """The key of a rate: ``<model>|<engine>|<device>|<stacked or single>``."""
    return f"{model}|{engine}|{device}|{'stacked' if stacked else 'single'}"


def learn_rates(finished: Iterable[tuple[Mapping, float]]) -> dict[str, dict]:
    """Rates from finished cells.

    Args:
        finished: (summary.json of a cell, its sample-steps) pairs. A stacked group's cells each
            record the group's ``wall_seconds``; each is charged its share.

    Returns:
        ``{key: {"points": [[sample-steps, seconds per sample-step], ...], "cells": count}}``: one
        point per half-decade of sample-steps (the medians of its cells), by increasing size.
    """
    per: dict[str, dict[int, list[tuple[float, float]]]] = {}
    for summary, work in finished:
        wall, spec = summary.get("wall_seconds"), summary.get("spec") or {}
        if not wall or not work or summary.get("status") not in ("ok", "diverged"):
            continue
        group = len(summary.get("stacked_cells") or []) or 1
        key = rate_key(spec.get("model", {}).get("name", "?"), summary.get("engine", "?"),
                       summary.get("device", "cpu"), group > 1)
        per.setdefault(key, {}).setdefault(math.floor(2 * math.log10(work)), []).append((work, wall / group / work))
    return {k: {"points": [[statistics.median(w for w, _ in b[i]), statistics.median(r for _, r in b[i])]
                           for i in sorted(b)],
                "cells": sum(len(v) for v in b.values())} for k, b in per.items()}


def rate_at(points: Sequence[Sequence[float]], work: float) -> float:
    """The rate of a cell of ``work`` sample-steps from a key's points (sample-steps, rate):
    linear in log-log between the two points around it; the nearest point's rate outside them."""
    if work <= points[0][0] or len(points) == 1:
        return float(points[0][1])
    if work >= points[-1][0]:
        return float(points[-1][1])
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x0 <= work <= x1:
            t = (math.log(work) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return math.exp(math.log(y0) + t * (math.log(y1) - math.log(y0)))
    return float(points[-1][1])


def shipped_rates(path: str | Path = RATES_PATH) -> dict:
    """The shipped rate table (:data:`RATES_PATH`); an empty one when the file is absent."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        return {"rates": {}, "job_startup_s": 5.0}


@dataclass
class Job:
    """One training job: its experiment, its cells' sample-steps and rate keys, its runtime.

    ``runtime`` is the configured minutes *per stack group* (None: unset, :func:`auto_runtime` of
    the whole job applies); a job of ``groups`` groups one after another (stack_groups_per_job)
    asks for ``runtime × groups``. ``key`` is the config key that sets ``runtime`` (default: the
    experiment's ``resources.runtime``)."""

    experiment: str
    work: list[tuple[float, str]]
    runtime: int | None
    name: object = None  # the job's key in the workflow (a stacked rule's name, a cell's key)
    seconds: float = 0.0
    guessed: set = field(default_factory=set)
    groups: int = 1
    key: str | None = None

    def limit(self) -> int:
        """The minutes this job asks for on its first attempt: ``runtime × groups`` when set,
        else :func:`auto_runtime` of its estimate."""
        return self.runtime * self.groups if self.runtime is not None else auto_runtime(self.seconds)

    def over(self) -> bool:
        """Whether its estimate exceeds a configured runtime (an unset one follows the estimate)."""
        return self.runtime is not None and self.seconds > 60 * self.limit()

    def runtime_key(self) -> str:
        """The config key path that sets this job's runtime."""
        return self.key or f"experiments.{self.experiment}.resources.runtime"


def price(jobs: Sequence[Job], learned: Mapping[str, dict], shipped: Mapping) -> None:
    """Set each job's ``seconds``: start-up plus Σ sample-steps × :func:`rate_at` of the key's
    points (learned, else shipped; else a guess, and the key is added to the job's ``guessed``:
    for a ``cuda`` key the same model's ``cpu`` rate, learned or shipped, else the slowest shipped
    rate)."""
    rates = {k: v["points"] for k, v in learned.items()}
    table = shipped.get("rates", {})
    slowest = max((y for points in table.values() for _, y in points), default=1e-5)
    for job in jobs:
        total = float(shipped.get("job_startup_s", 5.0))
        for work, key in job.work:
            points = rates.get(key, table.get(key))
            if points is None:
                job.guessed.add(key)
                cpu = key.replace("|cuda|", "|cpu|")
                points = rates.get(cpu, table.get(cpu))
            total += work * (rate_at(points, work) if points else slowest)
        job.seconds = total


def job_count(cells: Sequence[Mapping], groups_per_job: int | None) -> int:
    """How many training jobs an experiment's cells make in all: one per cell, or with stacking
    (``groups_per_job``: its stack_groups_per_job) its stack groups, up to that many per job per
    dataset (fedbench.engine.rounds.stacking.stack_key)."""
    if groups_per_job is None:
        return len(cells)
    from fedbench.config import training_spec
    from fedbench.engine.rounds.stacking import stack_key

    groups: dict[str, set] = {}
    for c in cells:
        groups.setdefault(c["dataset"], set()).add(stack_key(training_spec(c)))
    return sum(math.ceil(len(g) / groups_per_job) for g in groups.values())


def auto_runtime(seconds: float | None) -> int:
    """A train job's runtime in minutes when the config sets none: ⌈RUNTIME_MARGIN × estimate⌉,
    at least :data:`MIN_RUNTIME` (also when there is no estimate)."""
    if seconds is None:
        return MIN_RUNTIME
    return max(MIN_RUNTIME, math.ceil(RUNTIME_MARGIN * seconds / 60))


def suggested_runtime(job: Job) -> int:
    """The ``runtime`` (minutes, per stack group) to configure so that ``job`` fits:
    :func:`auto_runtime` of its estimate shared among its groups."""
    return auto_runtime(job.seconds / max(1, job.groups))


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def report(jobs: Sequence[Job], totals: Mapping[str, int], device: str, learned: Mapping[str, dict]) -> list[str]:
    """The lines printed before a run: per experiment its training jobs to run (of its total),
    their estimated CPU or GPU time and the longest job against its runtime; then one ⚠ line per
    experiment whose jobs exceed their runtime, with the key to set.

    Args:
        jobs: the jobs still to run, priced (:func:`price`).
        totals: {experiment: its training jobs in all, done ones included}.
        device: ``cpu`` or ``cuda`` (the unit of the time: CPU or GPU).
        learned: the learned rates (their cell counts are shown).
    """
    unit = "GPU" if device == "cuda" else "CPU"
    lines = []
    for experiment, total in totals.items():
        mine = [j for j in jobs if j.experiment == experiment]
        if not mine:
            lines.append(f"{experiment}: all {total} training jobs done")
            continue
        seconds = sum(j.seconds for j in mine)
        longest = max(mine, key=lambda j: j.seconds)
        guessed = sorted(set().union(*(j.guessed for j in mine)))
        note = (f" (no measured rate for {', '.join(guessed)}: assumed its model's CPU rate, else the slowest "
                "known)") if guessed else ""
        lines.append(f"{experiment}: {len(mine)} training jobs to run (of {total}), ~{_duration(seconds)} of "
                     f"{unit} time; the longest ~{_duration(longest.seconds)} (runtime {longest.limit()} min){note}")
        over = [j for j in mine if j.over()]
        if over:
            worst = max(over, key=lambda j: j.seconds)
            keys = {}  # config key -> the per-group runtime that fits its jobs
            for j in over:
                keys[j.runtime_key()] = max(keys.get(j.runtime_key(), 0), suggested_runtime(j))
            sets = "; ".join(f"{k}: {v}" for k, v in keys.items())
            per_group = " (per stack group)" if any(j.groups > 1 for j in over) else ""
            lines.append(f"⚠ {experiment}: {len(over)} of its jobs need more than their runtime "
                         f"({worst.limit()} min; the longest ~{_duration(worst.seconds)}): "
                         f"a cluster would kill them. Set {sets}{per_group} "
                         f"(or delete runtime: unset, it is the estimate × {RUNTIME_MARGIN:g}, at least "
                         f"{MIN_RUNTIME} min), or make the jobs smaller (stack_groups_per_job, fewer rounds)")
    if learned:
        lines.append("rates learned here from " + ", ".join(f"{v['cells']} {k}" for k, v in sorted(learned.items()))
                     + " cells; others shipped (fedbench/cost_rates.json)")
    return lines
