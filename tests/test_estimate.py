"""fedbench.estimate: the work of a cell, rates learned and shipped, the report and the runtime."""

from __future__ import annotations

import copy

import pytest

from fedbench import estimate
from fedbench.config import expand_cells, job_resources, train_resources

TINY = {
    "datasets": {"digits": {"source": "digits"}},
    "experiments": {
        "e": {
            "seeds": [0],
            "rounds": 10,
            "sampling": {"scheme": "uniform", "participation": 0.5},
            "local": {"epochs": 1, "batch_size": 32, "lr": 0.1},
            "datasets": {"digits": {"model": {"name": "logreg"},
                                    "partitions": {"iid": {"scheme": "iid", "num_clients": 4}}}},
            "algorithms": {"fedavg": {}},
        }
    },
}


def cell(**local):
    cfg = copy.deepcopy(TINY)
    cfg["experiments"]["e"]["local"].update(local)
    (c,) = expand_cells(cfg)
    return c


def test_sample_steps_by_hand():
    # 400 samples over 4 clients: 100 each, ⌈100 / 32⌉ = 4 steps an epoch; 2 clients a round; 10 rounds
    assert estimate.sample_steps(cell(), 400, 4) == 10 * 2 * 4 * 32
    assert estimate.sample_steps(cell(epochs=3), 400, 4) == 10 * 2 * 12 * 32
    assert estimate.sample_steps(cell(epochs=None, steps=5), 400, 4) == 10 * 2 * 5 * 32
    # a heterogeneous amount of local work: its mean, (2 + 6) / 2 epochs
    hetero = cell(epochs={"distribution": "uniform", "low": 2, "high": 6})
    assert estimate.sample_steps(hetero, 400, 4) == 10 * 2 * 16 * 32


def test_learned_rates_charge_a_stacked_group_once():
    key = estimate.rate_key("logreg", "vectorized", "cpu", True)
    group = ["a", "b", "c", "d"]
    summaries = [({"wall_seconds": 8.0, "status": "ok", "engine": "vectorized", "device": "cpu",
                   "spec": {"model": {"name": "logreg"}}, "stacked_cells": group}, 1000.0) for _ in group]
    learned = estimate.learn_rates(summaries + [({"wall_seconds": 1.0, "status": "failed"}, 1.0)])
    assert learned == {key: {"points": [[1000.0, 8.0 / 4 / 1000.0]], "cells": 4}}


def test_a_rate_falls_with_the_cell_size_between_the_points_measured():
    """One point per half-decade of sizes; a size between two points is read off log-log."""
    summary = {"status": "ok", "engine": "vectorized", "device": "cpu", "spec": {"model": {"name": "m"}}}
    small = [({**summary, "wall_seconds": 1.0}, 1e3)] * 3  # 1e-3 s per sample-step
    large = [({**summary, "wall_seconds": 10.0}, 1e7)] * 2  # 1e-6 s per sample-step
    (rates,) = estimate.learn_rates(small + large).values()
    assert rates == {"points": [[1e3, 1e-3], [1e7, 1e-6]], "cells": 5}
    assert estimate.rate_at(rates["points"], 1e5) == pytest.approx(10 ** -4.5)  # halfway in log-log
    assert estimate.rate_at(rates["points"], 10.0) == 1e-3 and estimate.rate_at(rates["points"], 1e9) == 1e-6


def test_learned_rates_win_over_shipped_and_an_unknown_key_is_a_flagged_guess():
    shipped = {"rates": {"a": [[1e6, 1e-6]], "b": [[1e3, 4e-6]]}, "job_startup_s": 2.0}
    jobs = [estimate.Job("e", [(1e6, "a")], None), estimate.Job("e", [(1e6, "a"), (1e6, "z")], None)]
    estimate.price(jobs, {"a": {"points": [[1e6, 3e-6]], "cells": 5}}, shipped)
    assert jobs[0].seconds == pytest.approx(2.0 + 3.0) and not jobs[0].guessed
    assert jobs[1].seconds == pytest.approx(2.0 + 3.0 + 4.0) and jobs[1].guessed == {"z"}


def test_a_run_that_cannot_finish_is_flagged_with_the_key_to_set():
    """200,000 rounds × 100 clients × 50 local epochs: far over the runtime it asks for."""
    cfg = copy.deepcopy(TINY)
    e = cfg["experiments"]["e"]
    e.update(rounds=200_000, resources={"runtime": 30})
    e["local"]["epochs"] = 50
    e["sampling"]["participation"] = 1.0
    e["datasets"]["digits"]["partitions"]["iid"]["num_clients"] = 100
    (c,) = expand_cells(cfg)
    work = estimate.sample_steps(c, 1437, 100)
    key = estimate.rate_key("logreg", "vectorized", "cpu", False)
    job = estimate.Job("e", [(work, key)], 30)
    estimate.price([job], {}, {"rates": {key: [[1e6, 1e-6]]}, "job_startup_s": 3.0})
    lines = estimate.report([job], {"e": 1}, "cpu", {})
    assert job.seconds > 3600
    assert lines[0].startswith("e: 1 training jobs to run (of 1), ~") and "runtime 30 min" in lines[0]
    assert lines[1].startswith("⚠ e: 1 of its jobs need more than their runtime (30 min")
    assert f"experiments.e.resources.runtime: {estimate.auto_runtime(job.seconds)}" in lines[1]


def test_a_small_run_is_not_flagged_and_a_finished_experiment_says_so():
    job = estimate.Job("e", [(10.0, "a")], None)
    estimate.price([job], {}, {"rates": {"a": [[10.0, 1e-3]]}, "job_startup_s": 1.0})
    lines = estimate.report([job], {"e": 1, "done": 4}, "cuda", {})
    assert lines == ["e: 1 training jobs to run (of 1), ~1 s of GPU time; the longest ~1 s (runtime 30 min)",
                     "done: all 4 training jobs done"]


def test_an_unset_runtime_is_the_estimate_with_a_margin():
    assert estimate.auto_runtime(None) == estimate.MIN_RUNTIME == 30
    assert estimate.auto_runtime(60.0) == 30  # at least the minimum
    assert estimate.auto_runtime(3600.0) == 180  # 3 × 60 min
    res = train_resources(copy.deepcopy(TINY))[("e", "digits")]
    assert res["runtime"] is None
    assert job_resources(res, 1, 3600.0)["runtime"] == 180
    assert job_resources(res, 2, 3600.0)["runtime"] == 360  # a retry asks for more, as a set runtime
    assert job_resources({**res, "runtime": 45}, 1, 3600.0)["runtime"] == 45  # a set runtime wins


def test_the_shipped_rates_name_their_measurement():
    shipped = estimate.shipped_rates()
    assert shipped["rates"] and all(r > 0 for points in shipped["rates"].values() for _, r in points)
    assert {"measured", "machine", "command", "job_startup_s"} <= set(shipped)
    assert "benchmarks/cost_rates.py" in shipped["command"]


def test_a_job_of_several_stack_groups_is_held_to_its_groups_runtime():
    """stack_groups_per_job: a job of 3 groups asks for 3 × the configured runtime, and the value
    to set is per group; a runtime set on the dataset is named by its own key."""
    shipped = {"rates": {"a": [[1.0, 1.0]]}, "job_startup_s": 0.0}
    fits = estimate.Job("e", [(20 * 60.0, "a")], 10, groups=3)  # 20 min against 3 × 10
    over = estimate.Job("e", [(40 * 60.0, "a")], 10, groups=3, key="experiments.e.datasets.d.resources.runtime")
    estimate.price([fits, over], {}, shipped)
    assert fits.limit() == 30 and not fits.over() and over.over()
    assert estimate.suggested_runtime(over) == 40  # 3 × 40 min / 3 groups
    lines = estimate.report([fits, over], {"e": 2}, "cpu", {})
    assert "(runtime 30 min)" in lines[0]
    assert lines[1].startswith("⚠ e: 1 of its jobs need more than their runtime (30 min")
    assert "Set experiments.e.datasets.d.resources.runtime: 40 (per stack group)" in lines[1]


def test_a_gpu_cell_without_a_gpu_rate_is_priced_at_its_models_cpu_rate_and_flagged():
    cpu, cuda = (estimate.rate_key("mlp", "vectorized", d, False) for d in ("cpu", "cuda"))
    shipped = {"rates": {cpu: [[1e6, 2e-6]], "slow": [[1e3, 1e-3]]}, "job_startup_s": 0.0}
    job, other = estimate.Job("e", [(1e6, cuda)], None), estimate.Job("e", [(1e6, "z|vectorized|cuda|single")], None)
    estimate.price([job, other], {}, shipped)
    assert job.seconds == pytest.approx(2.0) and job.guessed == {cuda}
    assert other.seconds == pytest.approx(1e3)  # no CPU rate of its model either: the slowest
    learned = {cuda: {"points": [[1e6, 5e-7]], "cells": 3}}
    estimate.price([job], learned, shipped)
    assert job.seconds == pytest.approx(0.5)
