"""fedbench.config.settings: settings merged across the levels of a config and their canonical form
in a cell's spec."""

from __future__ import annotations

import pytest
from configs import SPEC_KEYS, rejects, tiny

from fedbench.config import ConfigError, check_config, expand_cells


def test_local_overrides_and_epochs_steps_precedence():
    cfg = tiny()
    e = cfg["experiments"]["e"]
    e["datasets"]["digits"]["local"] = {"lr": 0.1}
    e["algorithms"]["fedprox"]["local"] = {"steps": 7}
    e["algorithms"]["scaffold_fast"] = {"algorithm": "scaffold", "server_lr": 0.5, "local": {"lr": 0.2}}
    cells = {(c["algorithm"], c["seed"]): c for c in expand_cells(cfg)}
    assert cells[("fedavg", 0)]["local"]["lr"] == 0.1 and cells[("fedavg", 0)]["local"]["epochs"] == 1
    assert cells[("fedprox", 0)]["local"]["steps"] == 7 and cells[("fedprox", 0)]["local"]["epochs"] is None
    s = cells[("scaffold_fast", 0)]
    assert s["algorithm_name"] == "scaffold" and s["hparams"]["server_lr"] == 0.5 and s["local"]["lr"] == 0.2


def test_unknown_dataset_id_in_experiment():
    cfg = tiny()
    cfg["experiments"]["e"]["datasets"]["cifar"] = {"model": "logreg", "partitions": {"iid": {"scheme": "iid"}}}
    rejects(cfg, "experiments.e.datasets.cifar", "unknown dataset id 'cifar'", "datasets:")


def test_epochs_and_steps_both_given():
    cfg = tiny()
    cfg["experiments"]["e"]["local"]["steps"] = 5
    rejects(cfg, "experiments.e.local", "exactly one of epochs or steps")


def test_epochs_and_steps_neither_given():
    cfg = tiny()
    del cfg["experiments"]["e"]["local"]["epochs"]
    rejects(cfg, "experiments.e.local", "exactly one of", "neither")


def _with_cifar(**exp_over) -> dict:
    cfg = tiny()
    cfg["datasets"]["cifar"] = {"source": "cifar10"}
    cfg["experiments"]["e"]["datasets"]["cifar"] = {"model": "cnn", "partitions": {"iid": {"scheme": "iid"}}}
    cfg["experiments"]["e"].update(exp_over)
    return cfg


def _aug(cells, dataset):
    values = [c.get("augmentation", "absent") for c in cells if c["dataset"] == dataset]
    assert len({repr(v) for v in values}) == 1
    return values[0]


def test_augmentation_is_in_the_spec_of_image_datasets_only():
    from fedbench.data.images import CIFAR_AUGMENTATION

    cells = expand_cells(_with_cifar())
    # default: as the dataset says (cifar10's augment defaults to true: the FedDyn recipe)
    assert _aug(cells, "cifar") == CIFAR_AUGMENTATION
    assert _aug(cells, "digits") == "absent"  # sources without augmentation: no key, spec as before
    assert all(set(c) == SPEC_KEYS | ({"augmentation"} if c["dataset"] == "cifar" else set()) for c in cells)

    cfg = _with_cifar()
    cfg["datasets"]["cifar"]["augment"] = False
    assert _aug(expand_cells(cfg), "cifar") is None


def test_augment_precedence_dataset_then_experiment_then_experiment_dataset():
    from fedbench.engine.rounds.cell import spec_id

    on, off = expand_cells(_with_cifar()), expand_cells(_with_cifar(augment=False))
    assert _aug(off, "cifar") is None and _aug(off, "digits") == "absent"  # experiment level skips digits
    cfg = _with_cifar(augment=False)
    cfg["experiments"]["e"]["datasets"]["cifar"]["augment"] = True
    assert _aug(expand_cells(cfg), "cifar") is not None
    cfg = _with_cifar()
    cfg["datasets"]["cifar"]["augment"] = False
    cfg["experiments"]["e"]["augment"] = True
    assert _aug(expand_cells(cfg), "cifar") is not None
    # augmentation changes results: it changes the cell's spec hash (digits cells are untouched)
    key = lambda c: (c["dataset"], c["algorithm"], c["seed"])  # noqa: E731
    ids_on, ids_off = ({key(c): spec_id(c) for c in cs} for cs in (on, off))
    for k in ids_on:
        assert (ids_on[k] == ids_off[k]) == (k[0] == "digits")


def test_augment_rejects_bad_values_and_non_image_datasets():
    rejects(_with_cifar(augment="yes"), "experiments.e.augment", "true, false or null")
    cfg = _with_cifar()
    cfg["experiments"]["e"]["datasets"]["digits"]["augment"] = True
    rejects(cfg, "experiments.e.datasets.digits.augment", "no training augmentation", "cifar10")
    cfg["experiments"]["e"]["datasets"]["digits"]["augment"] = False  # false is harmless
    check_config(cfg)


def test_delta_histogram_resolves_rounds_into_the_spec_and_rejects_bad_values():
    cfg = tiny()
    assert all("delta_histogram" not in c for c in expand_cells(cfg))  # absent: specs unchanged
    cfg["experiments"]["e"]["delta_histogram"] = {"rounds": ["last", 1, 2]}
    assert {tuple(c["delta_histogram"]["rounds"]) for c in expand_cells(cfg)} == {(1, 2, 3)}
    cfg["experiments"]["e"]["delta_histogram"] = True
    assert {tuple(c["delta_histogram"]["rounds"]) for c in expand_cells(cfg)} == {(1, 3)}
    cfg["experiments"]["e"]["delta_histogram"] = False
    assert all("delta_histogram" not in c for c in expand_cells(cfg))
    cfg["experiments"]["e"]["delta_histogram"] = {"rounds": [4]}
    rejects(cfg, "experiments.e.delta_histogram.rounds", "beyond the 3 rounds", "last")
    cfg["experiments"]["e"]["delta_histogram"] = {"rounds": [0]}
    rejects(cfg, "experiments.e.delta_histogram.rounds[0]")
    cfg["experiments"]["e"]["delta_histogram"] = {"rounds": []}
    rejects(cfg, "experiments.e.delta_histogram.rounds", "non-empty list")
    cfg["experiments"]["e"]["delta_histogram"] = {"every": 2}
    rejects(cfg, "experiments.e.delta_histogram")


def test_replacement_is_in_the_local_spec_only_when_true():
    """local.replacement (FedAc's oracle: minibatches i.i.d. with replacement) needs steps; false
    (the default) leaves every cell's spec and spec_id as before."""
    from fedbench.engine.rounds.cell import spec_id

    plain = expand_cells(tiny())
    assert all("replacement" not in c["local"] for c in plain)
    cfg = tiny()
    cfg["experiments"]["e"]["local"] = {"steps": 4, "batch_size": 1, "lr": 0.05, "replacement": False}
    off = expand_cells(cfg)
    assert all("replacement" not in c["local"] for c in off)
    cfg["experiments"]["e"]["local"]["replacement"] = True
    on = expand_cells(cfg)
    assert all(c["local"]["replacement"] is True and c["local"]["steps"] == 4 for c in on)
    assert spec_id(on[0]) != spec_id(off[0])
    cfg["experiments"]["e"]["algorithms"]["fedprox"]["local"] = {"replacement": False}
    cells = {(c["algorithm"], c["seed"]): c for c in expand_cells(cfg)}
    assert "replacement" not in cells[("fedprox", 0)]["local"] and cells[("fedavg", 0)]["local"]["replacement"]


def test_lr_schedule_is_in_the_local_spec_only_when_set():
    """local.lr_schedule (Sharma, Panda & Joshi, TMLR 2023, Table 3: lr / 10 after rounds 100 and
    200): canonical (factor defaults to 0.1), absent from cells without it (their spec_id unchanged)."""
    from fedbench.engine.rounds.cell import spec_id

    plain = expand_cells(tiny())
    assert all("lr_schedule" not in c["local"] for c in plain)
    cfg = tiny()
    cfg["experiments"]["e"]["local"]["lr_schedule"] = None
    assert [spec_id(c) for c in expand_cells(cfg)] == [spec_id(c) for c in plain]
    cfg["experiments"]["e"]["local"]["lr_schedule"] = {"milestones": [100, 200]}
    on = expand_cells(cfg)
    assert all(c["local"]["lr_schedule"] == {"milestones": [100, 200], "factor": 0.1} for c in on)
    assert spec_id(on[0]) != spec_id(plain[0])
    cfg["experiments"]["e"]["algorithms"]["fedprox"]["local"] = {"lr_schedule": {"milestones": [5], "factor": 0.5}}
    cells = {(c["algorithm"], c["seed"]): c for c in expand_cells(cfg)}
    assert cells[("fedprox", 0)]["local"]["lr_schedule"] == {"milestones": [5], "factor": 0.5}
    assert cells[("fedavg", 0)]["local"]["lr_schedule"]["milestones"] == [100, 200]


@pytest.mark.parametrize("schedule, fragments", [
    ({"milestones": [200, 100]}, ("experiments.e.local.lr_schedule.milestones: must be strictly increasing",)),
    ({"milestones": [100, 100]}, ("experiments.e.local.lr_schedule.milestones: must be strictly increasing",)),
    ({"milestones": []}, ("lr_schedule",)),
    ({"milestones": [0]}, ("lr_schedule",)),
    ({"milestones": [10], "factor": 0}, ("lr_schedule",)),
    ({"factor": 0.1}, ("lr_schedule",)),
    ({"milestones": [10], "gamma": 0.1}, ("lr_schedule",)),
])
def test_a_bad_lr_schedule_is_rejected_with_its_key_path(schedule, fragments):
    cfg = tiny()
    cfg["experiments"]["e"]["local"]["lr_schedule"] = schedule
    rejects(cfg, *fragments)


def test_lr_schedule_rules_beyond_the_schema_name_the_key_path():
    from fedbench.config import _lr_schedule

    for bad, key in (([3, 2], "milestones"), ([1.5], "milestones"), ([True], "milestones")):
        with pytest.raises(ConfigError, match=f"^p.lr_schedule.{key}: "):
            _lr_schedule({"milestones": bad}, "p.lr_schedule")
    with pytest.raises(ConfigError, match="^p.lr_schedule.factor: "):
        _lr_schedule({"milestones": [1], "factor": -1.0}, "p.lr_schedule")
    with pytest.raises(ConfigError, match="^p.lr_schedule: must be a mapping"):
        _lr_schedule([100, 200], "p.lr_schedule")


def test_replacement_with_epochs_is_rejected_with_its_key_path():
    cfg = tiny()
    cfg["experiments"]["e"]["local"]["replacement"] = True
    rejects(cfg, "experiments.e.local.replacement: minibatches drawn with replacement need local.steps",
            "give local.steps instead of local.epochs")
    cfg = tiny()
    cfg["experiments"]["e"]["local"] = {"steps": 4, "batch_size": 1, "lr": 0.05, "replacement": True}
    cfg["experiments"]["e"]["algorithms"]["fedprox"]["local"] = {"epochs": 2}
    rejects(cfg, "experiments.e.algorithms.fedprox.local.replacement:", "an epoch is a pass without replacement")
    cfg = tiny()
    cfg["experiments"]["e"]["local"]["replacement"] = "yes"
    rejects(cfg, "replacement")


def test_collapse_rule_is_in_the_spec_only_when_set():
    from fedbench.engine.rounds.cell import COLLAPSE_DEFAULTS, collapse_rule, spec_id

    plain = expand_cells(tiny())
    assert all("collapse" not in c for c in plain)  # unset: the engine's defaults, spec_id unchanged
    cfg = tiny()
    cfg["experiments"]["e"]["collapse"] = {"loss_factor": 50}
    cells = expand_cells(cfg)
    assert all(c["collapse"] == {"loss_factor": 50} for c in cells)
    assert collapse_rule(cells[0]) == {**COLLAPSE_DEFAULTS, "loss_factor": 50}
    assert spec_id(cells[0]) != spec_id(plain[0])
    cfg["experiments"]["e"]["collapse"] = True
    assert collapse_rule(expand_cells(cfg)[0]) == COLLAPSE_DEFAULTS
    cfg["experiments"]["e"]["collapse"] = {"loss_factr": 50}
    rejects(cfg, "experiments.e.collapse")
    cfg["experiments"]["e"]["collapse"] = {"loss_factor": 0.5}
    rejects(cfg, "experiments.e.collapse.loss_factor")


def test_eval_initial_is_in_the_spec_only_when_true():
    from fedbench.engine.rounds.cell import spec_id

    plain = expand_cells(tiny())
    assert all("eval_initial" not in c for c in plain)  # unset: no round-0 row, spec_id unchanged
    cfg = tiny()
    cfg["experiments"]["e"]["eval_initial"] = False
    assert [spec_id(c) for c in expand_cells(cfg)] == [spec_id(c) for c in plain]
    cfg["experiments"]["e"]["eval_initial"] = True
    cells = expand_cells(cfg)
    assert all(c["eval_initial"] is True for c in cells)
    assert spec_id(cells[0]) != spec_id(plain[0])
    # a dataset's own value wins over the experiment's, either way
    cfg["experiments"]["e"]["datasets"]["digits"]["eval_initial"] = False
    assert all("eval_initial" not in c for c in expand_cells(cfg) if c["dataset"] == "digits")
    cfg = tiny()
    cfg["experiments"]["e"]["datasets"]["digits"]["eval_initial"] = True
    assert all(c["eval_initial"] is True for c in expand_cells(cfg) if c["dataset"] == "digits")
    cfg["experiments"]["e"]["eval_initial"] = "yes"
    rejects(cfg, "experiments.e.eval_initial")


def test_local_work_distribution_in_the_spec_in_canonical_form():
    """local.epochs / local.steps may be a distribution (τ_i ~ Uniform{low..high}); the spec holds it
    with a fixed key order and ``per`` defaulting to ``round``; fixed per client is a different spec."""
    from fedbench.engine.rounds.cell import spec_id

    cfg = tiny()
    cfg["experiments"]["e"]["local"]["epochs"] = {"high": 5, "low": 2, "distribution": "uniform"}
    cells = expand_cells(cfg)
    work = cells[0]["local"]["epochs"]
    assert work == {"distribution": "uniform", "low": 2, "high": 5, "per": "round"}
    assert list(work) == ["distribution", "low", "high", "per"] and cells[0]["local"]["steps"] is None
    cfg["experiments"]["e"]["local"]["epochs"]["per"] = "client"
    fixed = expand_cells(cfg)
    assert fixed[0]["local"]["epochs"]["per"] == "client" and spec_id(fixed[0]) != spec_id(cells[0])
    # steps may be a distribution too, and a level's steps clears an inherited epochs distribution
    cfg["experiments"]["e"]["algorithms"]["fedprox"]["local"] = {"steps": {"distribution": "uniform", "low": 1,
                                                                          "high": 3}}
    by = {c["algorithm"]: c["local"] for c in expand_cells(cfg)}
    assert by["fedprox"]["epochs"] is None and by["fedprox"]["steps"]["high"] == 3
    assert by["fedavg"]["epochs"]["per"] == "client"


@pytest.mark.parametrize("work,fragments", [
    ({"distribution": "uniform", "low": 5, "high": 2},
     ["experiments.e.local.epochs.high: must be >= experiments.e.local.epochs.low (got low=5, high=2)"]),
    ({"distribution": "normal", "low": 2, "high": 5}, ["experiments.e.local.epochs.distribution", "uniform"]),
    ({"distribution": "uniform", "low": 0, "high": 5}, ["experiments.e.local.epochs.low", "1"]),
    ({"distribution": "uniform", "low": 2}, ["experiments.e.local.epochs.high: missing"]),
    ({"distribution": "uniform", "low": 2, "high": 5, "per": "epoch"},
     ["experiments.e.local.epochs.per", "round, client"]),
    ({"distribution": "uniform", "low": 2, "high": 5, "every": 1}, ["experiments.e.local.epochs.every: unknown key"]),
])
def test_local_work_distribution_errors_name_the_key(work, fragments):
    cfg = tiny()
    cfg["experiments"]["e"]["local"]["epochs"] = work
    rejects(cfg, *fragments)


def test_local_work_distribution_with_replacement_needs_steps_and_fedac_needs_a_fixed_k():
    cfg = tiny()
    cfg["experiments"]["e"]["local"]["epochs"] = {"distribution": "uniform", "low": 2, "high": 5}
    cfg["experiments"]["e"]["local"]["replacement"] = True
    rejects(cfg, "experiments.e.local.replacement: minibatches drawn with replacement need local.steps")
    cfg = tiny()
    cfg["experiments"]["e"]["local"] = {"steps": {"distribution": "uniform", "low": 2, "high": 5},
                                        "batch_size": 4, "lr": 0.05, "weight_decay": 0.01}
    cfg["experiments"]["e"]["algorithms"] = {"fedac": {"variant": "II"}}
    rejects(cfg, "experiments.e.algorithms.fedac", "drawn per client")
