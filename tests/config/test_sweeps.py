"""fedbench.config.sweeps: sweep grids expanded into cells, their labels, checks and select."""

from __future__ import annotations

import re

from configs import REPO, rejects, tiny

from fedbench.config import expand_cells, partitions


def test_lr_schedule_can_be_swept():
    cfg = tiny()
    cfg["experiments"]["e"]["sweep"] = {"grid": {"local.lr_schedule": [None, {"milestones": [2]},
                                                                       {"milestones": [1, 2], "factor": 0.5}]}}
    got = sorted((c["algorithm"], repr(c["local"].get("lr_schedule"))) for c in expand_cells(cfg) if c["seed"] == 0)
    assert [a for a, _ in got if a.startswith("fedavg")] == [
        "fedavg,lr_schedule=null", "fedavg,lr_schedule=step1-2x0.5", "fedavg,lr_schedule=step2x0.1"]
    assert dict(got)["fedavg,lr_schedule=step2x0.1"] == repr({"milestones": [2], "factor": 0.1})
    assert dict(got)["fedavg,lr_schedule=null"] == "None"


def test_replacement_can_be_swept():
    cfg = tiny()
    e = cfg["experiments"]["e"]
    e["local"] = {"steps": 3, "batch_size": 1, "lr": 0.1}
    e["sweep"] = {"grid": {"local.replacement": [False, True]}}
    got = sorted((c["algorithm"], c["local"].get("replacement")) for c in expand_cells(cfg) if c["seed"] == 0)
    assert got == [("fedavg,replacement=false", None), ("fedavg,replacement=true", True),
                   ("fedprox,replacement=false", None), ("fedprox,replacement=true", True)]
    e["local"] = {"epochs": 1, "batch_size": 1, "lr": 0.1}
    rejects(cfg, "experiments.e.sweep.grid.local.replacement[1]: minibatches drawn with replacement need local.steps")


def swept(**levels) -> dict:
    """``tiny()`` with ``sweep`` blocks: experiment=..., dataset=..., fedavg=..., fedprox=...; fedprox
    without its own mu (so that an outer mu sweep reaches it)."""
    cfg = tiny()
    e = cfg["experiments"]["e"]
    e["algorithms"]["fedprox"] = {}
    for where, sweep in levels.items():
        target = {"experiment": e, "dataset": e["datasets"]["digits"]}.get(where) or e["algorithms"][where]
        target["sweep"] = sweep
    return cfg


def by_name(cells: list[dict]) -> dict[tuple, dict]:
    return {(c["dataset"], c["partition"], c["algorithm"], c["seed"]): c for c in cells}


def test_a_sweep_expands_into_the_product_with_labels_point_grid_and_select():
    cfg = swept(experiment={"grid": {"local.lr": [0.01, 0.1]}}, fedprox={"grid": {"mu": [0.001, 0.01, 1]}})
    cells = expand_cells(cfg)
    assert len(cells) == (2 + 2 * 3) * 2  # fedavg: 2 lr; fedprox: 2 lr × 3 mu; × 2 seeds
    assert [c["algorithm"] for c in cells if c["seed"] == 0] == [
        "fedavg,lr=0.01", "fedavg,lr=0.1",
        "fedprox,lr=0.01,mu=0.001", "fedprox,lr=0.01,mu=0.01", "fedprox,lr=0.01,mu=1.0",
        "fedprox,lr=0.1,mu=0.001", "fedprox,lr=0.1,mu=0.01", "fedprox,lr=0.1,mu=1.0"]
    c = by_name(cells)[("digits", "iid", "fedprox,lr=0.1,mu=0.01", 1)]
    assert c["local"]["lr"] == 0.1 and c["hparams"] == {"mu": 0.01} and c["partition"] == "iid"
    assert c["sweep"] == {
        "label": "fedprox", "partition": "iid", "point": {"local.lr": 0.1, "mu": 0.01},
        "grid": {"local.lr": [0.01, 0.1], "mu": [0.001, 0.01, 1.0]},
        "select": {"metric": "test_accuracy", "statistic": "final", "last": 10, "direction": "max",
                   "average_seeds": True}}
    assert list(c) == list(expand_cells(tiny())[0])  # the key order of every cell
    assert by_name(cells)[("digits", "iid", "fedavg,lr=0.01", 0)]["sweep"]["grid"] == {"local.lr": [0.01, 0.1]}


def test_swept_values_are_canonical_in_labels_points_and_grids():
    cfg = swept(experiment={"grid": {"local.lr": [1, 0.5], "local.batch_size": [8]}}, fedprox={"grid": {"mu": [0, 2]}})
    cells = by_name(expand_cells(cfg))
    c = cells[("digits", "iid", "fedprox,lr=1.0,batch_size=8,mu=0.0", 0)]
    assert c["sweep"]["point"] == {"local.lr": 1.0, "local.batch_size": 8, "mu": 0.0}
    assert [type(v) for v in c["sweep"]["point"].values()] == [float, int, float]
    assert c["sweep"]["grid"] == {"local.lr": [1.0, 0.5], "local.batch_size": [8], "mu": [0.0, 2.0]}
    assert repr(c["local"]) == repr({"epochs": 1, "steps": None, "batch_size": 8, "lr": 1.0, "lr_decay": 1.0,
                                     "weight_decay": 0.0, "clip_norm": None})


def test_zip_axes_are_paired_and_form_one_axis_of_the_product():
    cfg = swept(experiment={"zip": {"local.lr": [0.01, 0.1, 1.0], "mu": [0.001, 0.01, 0.1]},
                            "grid": {"local.batch_size": [8, 16]}})
    cells = [c for c in expand_cells(cfg) if c["seed"] == 0]
    prox = [c["algorithm"] for c in cells if c["algorithm_name"] == "fedprox"]
    assert prox == [f"fedprox,batch_size={b},lr={lr},mu={mu}" for b in (8, 16)
                    for lr, mu in ((0.01, 0.001), (0.1, 0.01), (1.0, 0.1))]
    # fedavg has no mu: the zip reaches it as the lr axis alone
    avg = [c for c in cells if c["algorithm_name"] == "fedavg"]
    assert [c["algorithm"] for c in avg] == [f"fedavg,batch_size={b},lr={lr}"
                                             for b in (8, 16) for lr in (0.01, 0.1, 1.0)]
    assert avg[0]["sweep"]["grid"] == {"local.batch_size": [8, 16], "local.lr": [0.01, 0.1, 1.0]}
    p = next(c for c in cells if c["algorithm_name"] == "fedprox")
    assert p["sweep"]["grid"] == {"local.batch_size": [8, 16], "local.lr": [0.01, 0.1, 1.0], "mu": [0.001, 0.01, 0.1]}
    # a zip whose pairs repeat a value once an axis is left out gives that value once
    cfg = swept(experiment={"zip": {"local.lr": [0.1, 0.1], "mu": [0.01, 0.1]}})
    cells = [c for c in expand_cells(cfg) if c["seed"] == 0]
    assert [c["algorithm"] for c in cells] == ["fedavg,lr=0.1", "fedprox,lr=0.1,mu=0.01", "fedprox,lr=0.1,mu=0.1"]
    assert cells[0]["sweep"]["grid"] == {"local.lr": [0.1]}


def test_sweep_precedence_experiment_dataset_algorithm_and_select_merged_key_by_key():
    cfg = swept(experiment={"grid": {"local.lr": [0.01, 0.1], "local.batch_size": [8, 16]},
                            "select": {"statistic": "best"}},
                dataset={"grid": {"local.lr": [0.5]}, "select": {"last": 3}},
                fedprox={"grid": {"local.lr": [0.2, 0.3]}, "select": {"metric": "train_loss"}})
    cells = [c for c in expand_cells(cfg) if c["seed"] == 0]
    assert [c["algorithm"] for c in cells] == [  # the replaced axis keeps its place (lr before batch_size)
        "fedavg,lr=0.5,batch_size=8", "fedavg,lr=0.5,batch_size=16",
        "fedprox,lr=0.2,batch_size=8", "fedprox,lr=0.2,batch_size=16",
        "fedprox,lr=0.3,batch_size=8", "fedprox,lr=0.3,batch_size=16"]
    assert cells[0]["sweep"]["select"] == {"metric": "test_accuracy", "statistic": "best", "last": 3,
                                           "direction": "max", "average_seeds": True}
    assert cells[-1]["sweep"]["select"] == {"metric": "train_loss", "statistic": "best", "last": 3,
                                            "direction": "min", "average_seeds": True}  # min: not an accuracy
    cfg["experiments"]["e"]["algorithms"]["fedprox"]["sweep"]["select"]["direction"] = "max"
    assert expand_cells(cfg)[-1]["sweep"]["select"]["direction"] == "max"


def test_an_inner_single_value_wins_over_an_outer_sweep():
    cfg = swept(experiment={"grid": {"local.lr": [0.01, 0.1], "mu": [0.01, 0.1]}})
    e = cfg["experiments"]["e"]
    e["algorithms"]["fedprox_fixed"] = {"algorithm": "fedprox", "mu": 0.5, "local": {"lr": 0.05}}
    e["algorithms"]["fedavg_lr"] = {"algorithm": "fedavg", "local": {"lr": 0.2}}
    names = {c["algorithm"] for c in expand_cells(cfg)}
    assert names == {"fedavg,lr=0.01", "fedavg,lr=0.1", "fedavg_lr",  # fedavg has no mu; fedavg_lr its own lr
                     *(f"fedprox,lr={lr},mu={mu}" for lr in (0.01, 0.1) for mu in (0.01, 0.1)), "fedprox_fixed"}
    fixed = next(c for c in expand_cells(cfg) if c["algorithm"] == "fedprox_fixed")
    assert fixed["sweep"] is None and fixed["hparams"] == {"mu": 0.5} and fixed["local"]["lr"] == 0.05
    # a dataset's own local value wins too; the same level's single value is replaced by the sweep
    cfg = swept(experiment={"grid": {"local.lr": [0.01, 0.1]}})
    cfg["experiments"]["e"]["datasets"]["digits"]["local"] = {"lr": 0.3}
    assert all(c["sweep"] is None and c["local"]["lr"] == 0.3 for c in _expand_ok(cfg, sweeps_nothing=True))


def _expand_ok(cfg: dict, sweeps_nothing: bool = False) -> list[dict]:
    if sweeps_nothing:  # every cell overrides the sweep: that is an error naming the sweep
        rejects(cfg, "experiments.e.sweep.grid.local.lr: sweeps no cell", "inner level")
        del cfg["experiments"]["e"]["sweep"]
    return expand_cells(cfg)


def test_sweeping_epochs_follows_the_epochs_steps_clearing_rule():
    cfg = swept(experiment={"grid": {"local.epochs": [1, 2]}})
    cfg["experiments"]["e"]["algorithms"]["fedprox"] = {"local": {"steps": 7}}  # steps here clears epochs
    cells = [c for c in expand_cells(cfg) if c["seed"] == 0]
    assert [c["algorithm"] for c in cells] == ["fedavg,epochs=1", "fedavg,epochs=2", "fedprox"]
    assert cells[2]["local"]["steps"] == 7 and cells[2]["local"]["epochs"] is None
    # a dataset-level epochs sweep clears the experiment's steps
    cfg = swept(dataset={"grid": {"local.epochs": [1, 3]}})
    cfg["experiments"]["e"]["local"] = {"steps": 5, "batch_size": 16, "lr": 0.05}
    cells = [c for c in expand_cells(cfg) if c["algorithm_name"] == "fedavg" and c["seed"] == 0]
    assert [(c["local"]["epochs"], c["local"]["steps"]) for c in cells] == [(1, None), (3, None)]
    # the same level may not set steps and sweep epochs
    cfg = swept(experiment={"grid": {"local.epochs": [1, 2]}})
    cfg["experiments"]["e"]["local"] = {"steps": 5, "batch_size": 16, "lr": 0.05}
    rejects(cfg, "experiments.e.sweep.grid.local.epochs: the same level sets local.steps", "delete local.steps")
    # an epochs sweep outside a steps sweep of an algorithm does not reach it
    cfg = swept(experiment={"grid": {"local.epochs": [1, 2]}}, fedprox={"grid": {"local.steps": [3, 4]}})
    assert [c["algorithm"] for c in expand_cells(cfg) if c["seed"] == 0] == [
        "fedavg,epochs=1", "fedavg,epochs=2", "fedprox,steps=3", "fedprox,steps=4"]


def test_partition_rounds_and_participation_axes():
    cfg = swept(dataset={"grid": {"partition.num_clients": [5, 10], "rounds": [2, 4]}},
                fedprox={"grid": {"sampling.participation": [0.5, 1]}})
    cells = [c for c in expand_cells(cfg) if c["seed"] == 0]
    assert [(c["partition"], c["algorithm"]) for c in cells][:4] == [
        ("iid,num_clients=5", "fedavg,rounds=2"), ("iid,num_clients=5", "fedavg,rounds=4"),
        ("iid,num_clients=10", "fedavg,rounds=2"), ("iid,num_clients=10", "fedavg,rounds=4")]
    assert len(cells) == 2 * 2 + 2 * 2 * 2
    c = by_name(cells)[("digits", "iid,num_clients=10", "fedprox,rounds=4,participation=0.5", 0)]
    assert c["rounds"] == 4 and c["sampling"]["participation"] == 0.5
    assert c["sweep"]["partition"] == "iid" and c["sweep"]["label"] == "fedprox"
    assert c["sweep"]["point"] == {"partition.num_clients": 10, "rounds": 4, "sampling.participation": 0.5}
    parts = partitions(cfg)
    assert parts[("digits", "iid,num_clients=5")] == {**parts[("digits", "iid")], "num_clients": 5}
    assert set(parts) == {("digits", "iid"), ("digits", "iid,num_clients=5"), ("digits", "iid,num_clients=10")}
    # a parameter of one partition's scheme: the others are left unswept
    cfg = swept(dataset={"grid": {"partition.alpha": [0.1, 1.0]}})
    cfg["experiments"]["e"]["datasets"]["digits"]["partitions"]["dir"] = {"scheme": "dirichlet", "num_clients": 5}
    assert sorted({c["partition"] for c in expand_cells(cfg)}) == ["dir,alpha=0.1", "dir,alpha=1.0", "iid"]
    # each partition swept from its own parameters
    cfg = swept(experiment={"grid": {"partition.sigma": [0.0, 0.5]}})
    cfg["experiments"]["e"]["datasets"]["digits"]["partitions"]["iid7"] = {"scheme": "iid", "num_clients": 7}
    parts = partitions(cfg)
    assert {k[1]: v["num_clients"] for k, v in parts.items()} == {
        "iid": 5, "iid7": 7, "iid,sigma=0.0": 5, "iid,sigma=0.5": 5, "iid7,sigma=0.0": 7, "iid7,sigma=0.5": 7}
    assert parts[("digits", "iid7,sigma=0.5")]["sigma"] == 0.5


def test_every_swept_value_is_checked_as_a_single_value_and_named_by_its_sweep_path():
    rejects(swept(fedprox={"grid": {"mu": [0.1, 0.01, -1]}}))
    msg = rejects(swept(fedprox={"grid": {"mu": [0.1, 0.01, -1]}}))
    assert msg == "experiments.e.algorithms.fedprox.sweep.grid.mu[2]: must be >= 0 (got -1)"
    msg = rejects(swept(experiment={"grid": {"mu": [0.1, -1]}}))
    assert msg == "experiments.e.sweep.grid.mu[1]: must be >= 0 (got -1) (algorithm 'fedprox')"
    rejects(swept(experiment={"grid": {"local.lr": [0.1, -0.1]}}),
            "experiments.e.sweep.grid.local.lr[1]: must be > 0 (got -0.1)")
    rejects(swept(dataset={"grid": {"local.batch_size": [8, 2.5]}}),
            "experiments.e.datasets.digits.sweep.grid.local.batch_size[1]: must be an integer")
    rejects(swept(experiment={"zip": {"sampling.participation": [0.5, 1.5], "local.lr": [0.1, 0.2]}}),
            "experiments.e.sweep.zip.sampling.participation[1]: must be <= 1 (got 1.5)")
    rejects(swept(experiment={"grid": {"rounds": [0]}}), "experiments.e.sweep.grid.rounds[0]: must be >= 1 (got 0)")
    rejects(swept(fedprox={"grid": {"mu": ["big"]}}),
            "experiments.e.algorithms.fedprox.sweep.grid.mu[0]: must be a number")
    rejects(swept(dataset={"grid": {"partition.num_clients": [5, 5000]}}),
            "experiments.e.datasets.digits.sweep.grid.partition.num_clients[1]: num_clients=5000 exceeds the 1437")
    rejects(swept(experiment={"grid": {"partition.num_clients": [0]}}),
            "experiments.e.sweep.grid.partition.num_clients[0]: must be >= 1 (got 0)")
    cfg = swept(experiment={"grid": {"rounds": [2, 3]}})
    cfg["experiments"]["e"]["delta_histogram"] = {"rounds": [3]}
    rejects(cfg, "experiments.e.delta_histogram.rounds: round 3 is beyond the 2 rounds",
            "experiments.e.sweep.grid.rounds[0]")


def test_sweep_structure_errors_name_the_key_path():
    rejects(swept(experiment={"grid": {"local.momentum": [0.9]}}),
            "experiments.e.sweep.grid.local.momentum: unknown sweep axis 'local.momentum'; allowed: local.<key> "
            "(epochs, steps, batch_size, lr, lr_decay, lr_schedule, weight_decay, clip_norm, replacement)",
            "sampling.participation, rounds, eval_every, partition.<")
    rejects(swept(experiment={"grid": {"sampling.scheme": ["iid"]}}),
            "experiments.e.sweep.grid.sampling.scheme: unknown")
    rejects(swept(experiment={"grid": {"local.lr": []}}), "experiments.e.sweep.grid.local.lr: must be a non-empty list")
    rejects(swept(experiment={"grid": {"local.lr": 0.1}}), "experiments.e.sweep.grid.local.lr: must be a list")
    rejects(swept(fedprox={"grid": {"mu": [0.1, 0.01, 0.1]}}),
            "experiments.e.algorithms.fedprox.sweep.grid.mu[2]: duplicate of "
            "experiments.e.algorithms.fedprox.sweep.grid.mu[0] (0.1)")
    rejects(swept(experiment={"grid": {"local.lr": [1, 1.0]}}), "local.lr[1]: duplicate")
    rejects(swept(experiment={"zip": {"local.lr": [0.1, 0.2], "mu": [0.1, 0.2, 0.3]}}),
            "experiments.e.sweep.zip: zipped lists must have equal lengths (got local.lr: 2, mu: 3)")
    rejects(swept(experiment={"zip": {"local.lr": [0.1, 0.1], "mu": [0.1, 0.1]}}),
            "experiments.e.sweep.zip: the pairs [0] and [1] are equal")
    rejects(swept(experiment={"grid": {"local.lr": [0.1]}, "zip": {"local.lr": [0.2], "mu": [0.1]}}),
            "experiments.e.sweep.zip.local.lr: 'local.lr' is also in experiments.e.sweep.grid")
    rejects(swept(experiment={"grid": {"local.lr": [1e16, 10**16 + 1]}}),  # equal once converted to float
            "experiments.e.sweep.grid.local.lr[1]: this sweep point gives the same cell as "
            "experiments.e.sweep.grid.local.lr[0]", "'fedavg,lr=1e+16'")
    rejects(swept(experiment={"grid": {"beta": [0.1]}}),
            "experiments.e.sweep.grid.beta: 'beta' is not a hyperparameter of any algorithm of the experiment "
            "(fedavg, fedprox); known: mu")
    rejects(swept(fedavg={"grid": {"lr": [0.1]}}), "experiments.e.algorithms.fedavg.sweep.grid.lr: 'lr' is not a "
            "hyperparameter of algorithm label 'fedavg'", "swept as local.lr")
    rejects(swept(dataset={"grid": {"partition.alpha": [0.1]}}), "experiments.e.datasets.digits.sweep.grid.partition."
            "alpha: 'alpha' is not a parameter of the partition schemes it reaches (iid)")
    rejects(swept(experiment={"grid": {"mu": [0.1]}, "foo": 1}), "experiments.e.sweep.foo: unknown key")
    cfg = swept(fedprox={"grid": {"mu": [0.1]}})
    cfg["experiments"]["e"]["algorithms"]["fedprox"]["mu"] = 0.3  # the same level: the sweep replaces it
    assert {c["hparams"]["mu"] for c in expand_cells(cfg) if c["algorithm_name"] == "fedprox"} == {0.1}
    cfg["experiments"]["e"]["algorithms"]["fedprox"]["sweep"] = {"grid": {"mu": [0.1]}, "select": {"metric": "acc"}}
    rejects(cfg, "experiments.e.algorithms.fedprox.sweep.select.metric: unknown metric 'acc'; allowed:",
            "test_accuracy")
    for select, fragment in (({"statistic": "median"}, "select.statistic: must be one of final, best, mean_last"),
                             ({"last": 0}, "select.last: must be >= 1"),
                             ({"direction": "up"}, "select.direction: must be one of max, min"),
                             ({"average_seeds": "yes"}, "select.average_seeds: must be true or false")):
        rejects(swept(experiment={"grid": {"mu": [0.1]}, "select": select}), f"experiments.e.sweep.{fragment}")


def test_swept_labels_are_path_safe():
    from fedbench.config import CELL_ID_PATTERN

    cfg = swept(experiment={"grid": {"local.lr": [1e-5, 2.5e16], "local.clip_norm": [None, 1]}},
                dataset={"grid": {"partition.sigma": [0.5]}})
    cells = expand_cells(cfg)
    assert {c["algorithm"] for c in cells if c["algorithm_name"] == "fedavg"} == {
        f"fedavg,lr={lr},clip_norm={cn}" for lr in ("1e-05", "2.5e+16") for cn in ("null", "1.0")}
    assert all(re.fullmatch(CELL_ID_PATTERN, c[k]) for c in cells for k in ("partition", "algorithm"))
    cfg = tiny()
    cfg["experiments"]["e"]["algorithms"] = {"elastic_fedavg": {"sweep": {"grid": {"sensitivity": ["a/b"]}}}}
    # the algorithm's own check (check_cell) refuses it first, naming the swept value's key path
    rejects(cfg, "experiments.e.algorithms.elastic_fedavg.sweep.grid.sensitivity[0]: ", "(got 'a/b')")


def test_select_metrics_are_the_numeric_per_round_columns():
    from fedbench.config import select_metrics

    metrics = select_metrics()
    assert {"test_accuracy", "train_loss", "test_loss", "train_accuracy", "uplink_floats",
            "boosted_pct"} <= set(metrics)
    assert not {"round", "status", "experiment", "seed", "hparams_id"} & set(metrics)


def test_unswept_cells_keep_their_training_spec():
    from fedbench.config import training_spec

    plain = by_name(expand_cells(swept()))
    cells = by_name(expand_cells(swept(fedprox={"grid": {"mu": [0.01, 0.1]}})))
    for key in (("digits", "iid", "fedavg", 0), ("digits", "iid", "fedavg", 1)):
        assert cells[key]["sweep"] is None
        assert repr(training_spec(cells[key])) == repr(training_spec(plain[key]))
    assert all("sweep" not in training_spec(c) for c in cells.values())


def test_adding_a_grid_value_adds_cells_and_leaves_the_others_specs_identical():
    from fedbench.config import training_spec
    from fedbench.engine.rounds.cell import spec_id

    small = by_name(expand_cells(swept(experiment={"grid": {"local.lr": [0.01, 0.1]}},
                                       fedprox={"grid": {"mu": [0.1]}})))
    big = by_name(expand_cells(swept(experiment={"grid": {"local.lr": [0.01, 0.1, 1.0]}},
                                     fedprox={"grid": {"mu": [0.1, 1.0]}})))
    assert set(small) < set(big) and len(big) - len(small) == (1 + 4) * 2  # fedavg: lr 1.0; fedprox: 4 new points
    for key, cell in small.items():
        assert repr(training_spec(cell)) == repr(training_spec(big[key])) and spec_id(training_spec(cell)) == spec_id(
            training_spec(big[key]))
        assert cell["sweep"]["grid"] != big[key]["sweep"]["grid"]  # report-only: re-aggregates, retrains nothing
    # the points of a sweep are different specs (spec_id leaves out the identity: label, seed)
    assert len({spec_id(training_spec(c)) for c in big.values()}) == len(big) // 2


def test_the_lr_sweep_quick_experiment_file():
    from fedbench.config import load_yaml_strict, stacked_experiments

    cfg = load_yaml_strict(REPO / "config" / "experiments" / "lr_sweep_quick.yaml")
    cells = expand_cells(cfg)
    assert len(cells) == (6 + 6 * 4) * 3
    assert stacked_experiments(cfg) == {"lr_sweep_quick": 1}
    lrs, mus = [0.01, 0.03, 0.1, 0.3, 1.0, 3.0], [0.001, 0.01, 0.1, 1.0]
    assert sorted({c["algorithm"] for c in cells}) == sorted(
        [f"fedavg,lr={lr}" for lr in lrs] + [f"fedprox,lr={lr},mu={mu}" for lr in lrs for mu in mus])
    assert {c["seed"] for c in cells} == {0, 1, 2} and {c["partition"] for c in cells} == {"iid"}
    assert all(c["sweep"]["select"] == {"metric": "test_accuracy", "statistic": "mean_last", "last": 5,
                                        "direction": "max", "average_seeds": True} for c in cells)
    assert all(c["model"] == {"name": "mlp", "hidden": [64]} and c["rounds"] == 20 for c in cells)
    from fedbench.config import CELL_ID_PATTERN

    assert all(re.fullmatch(CELL_ID_PATTERN, c[k]) for c in cells for k in ("partition", "algorithm"))
    assert not re.fullmatch(CELL_ID_PATTERN, "fedprox,lr=0.1/x") and not re.fullmatch(CELL_ID_PATTERN, "a,=1")
    from snakemake.utils import validate  # the workflow's first check (rules/common.smk)

    validate(cfg, str(REPO / "workflow" / "schemas" / "config.schema.yaml"))
    assert cfg["experiments"]["lr_sweep_quick"]["stack"] is True


def test_eval_every_is_a_sweep_axis_zipped_with_steps_and_rounds():
    """FedAc's protocol: T = K · rounds fixed, evaluation every 512 steps = 512 / K rounds."""
    cfg = swept(experiment={"zip": {"local.steps": [1, 4], "rounds": [16, 4], "eval_every": [8, 2]},
                            "select": {"over": ["local.lr"]}, "grid": {"local.lr": [0.1, 1.0]}})
    cfg["experiments"]["e"]["local"] = {**cfg["experiments"]["e"].get("local", {}), "epochs": None}
    cells = [c for c in expand_cells(cfg) if c["seed"] == 0 and c["algorithm_name"] == "fedavg"]
    got = [(c["local"]["steps"], c["rounds"], c["eval_every"], c["local"]["lr"]) for c in cells]
    assert sorted(got) == sorted([(k, 16 // k, 8 // k, lr) for k in (1, 4) for lr in (0.1, 1.0)])
    assert cells[0]["sweep"]["select"]["over"] == ["local.lr"]
    bad = swept(experiment={"grid": {"eval_every": [1, 0]}})
    rejects(bad, "experiments.e.sweep.grid.eval_every[1]", ">= 1")
    bad = swept(experiment={"grid": {"local.lr": [0.1, 1.0]}, "select": {"over": ["local.steps"]}})
    rejects(bad, "experiments.e.sweep.select.over[0]", "not an axis of this sweep")


def test_select_over_nothing_makes_every_axis_a_condition():
    """``over: []``: nothing tuned (the minimax quick file's E, LocalUpdate's γ); kept in the cells'
    sweep record, where no ``over`` means every axis is tuned."""
    cfg = swept(experiment={"grid": {"local.lr": [0.1, 1.0]}, "select": {"over": []}})
    cells = expand_cells(cfg)
    assert cells[0]["sweep"]["select"]["over"] == []
    assert "over" not in expand_cells(swept(experiment={"grid": {"local.lr": [0.1, 1.0]}}))[0]["sweep"]["select"]


def test_local_work_distribution_can_be_swept_with_a_readable_label():
    """The paper's E ∈ {5, 7} (τ_i ~ Uniform{2..E}) as a sweep of local.epochs."""
    cfg = tiny()
    cfg["experiments"]["e"]["sweep"] = {"grid": {"local.epochs": [
        {"distribution": "uniform", "low": 2, "high": 5}, {"distribution": "uniform", "low": 2, "high": 7,
                                                           "per": "client"}]}}
    got = sorted((c["algorithm"], c["local"]["epochs"]["high"], c["local"]["epochs"]["per"])
                 for c in expand_cells(cfg) if c["seed"] == 0)
    assert got == [("fedavg,epochs=uniform2-5", 5, "round"), ("fedavg,epochs=uniform2-7.client", 7, "client"),
                   ("fedprox,epochs=uniform2-5", 5, "round"), ("fedprox,epochs=uniform2-7.client", 7, "client")]
