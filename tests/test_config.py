"""fedbench.config: the default suite, every rejected input, and the cell specs."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from fedbench import layout
from fedbench.config import ConfigError, check_config, datasets, expand_cells, partitions

REPO = Path(__file__).resolve().parents[1]
DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
SPEC_KEYS = {
    "experiment", "dataset", "partition", "algorithm", "seed", "algorithm_name", "hparams", "model",
    "local", "sampling", "rounds", "eval_every", "target_accuracy", "paper", "dtype", "sweep",
    "dataset_dir", "partition_dir",  # where its inputs live (fedbench.layout)
}


def tiny() -> dict:
    """A small valid config: one experiment, digits iid with logreg, two algorithms, two seeds."""
    return {
        "datasets": {"digits": {"source": "digits"}},
        "experiments": {
            "e": {
                "seeds": [0, 1],
                "rounds": 3,
                "local": {"epochs": 1, "batch_size": 16, "lr": 0.05},
                "datasets": {"digits": {"model": {"name": "logreg"},
                                        "partitions": {"iid": {"scheme": "iid", "num_clients": 5}}}},
                "algorithms": {"fedavg": {}, "fedprox": {"mu": 0.1}},
            }
        },
    }


def rejects(config: dict, *fragments: str) -> str:
    """Assert ``config`` is rejected and the message contains every fragment; return the message."""
    with pytest.raises(ConfigError) as info:
        check_config(config)
    msg = str(info.value)
    for fragment in fragments:
        assert fragment in msg, f"{fragment!r} not in {msg!r}"
    return msg


# ------------------------------------------------------------------------------ valid configs


def test_default_config_passes_and_has_45_cells():
    check_config(copy.deepcopy(DEFAULT))
    cells = expand_cells(copy.deepcopy(DEFAULT))
    # 3 dataset/partition settings × 5 algorithms × 3 seeds
    assert len(cells) == 45
    assert {(c["dataset"], c["partition"]) for c in cells} == {("digits", "iid"), ("digits", "dir0.3"),
                                                               ("synthetic_1_1", "natural")}
    assert {c["algorithm"] for c in cells} == {"fedavg", "fedavgm", "fedprox", "scaffold", "feddyn"}
    assert {c["seed"] for c in cells} == {0, 1, 2}
    assert all(set(c) == SPEC_KEYS for c in cells)
    assert len({(c["experiment"], c["dataset"], c["partition"], c["algorithm"], c["seed"]) for c in cells}) == 45


def test_default_config_passes_the_json_schema():
    from snakemake.utils import validate

    cfg = copy.deepcopy(DEFAULT)
    validate(cfg, str(REPO / "workflow" / "schemas" / "config.schema.yaml"))
    assert cfg["device"] == "auto" and cfg["dtype"] == "float32"


def test_schema_fills_defaults():
    from snakemake.utils import validate

    cfg = tiny()
    validate(cfg, str(REPO / "workflow" / "schemas" / "config.schema.yaml"))
    assert cfg["dtype"] == "float32"
    assert cfg["experiments"]["e"]["eval_every"] == 1
    assert cfg["experiments"]["e"]["target_accuracy"] is None
    assert cfg["data"] == {"mirror": None, "trust_mirror_checksums": False}
    assert cfg["engine"] is None and cfg["chunk_size"] is None
    check_config(cfg)


def test_cell_spec_is_fully_resolved():
    cells = expand_cells(tiny())
    assert len(cells) == 4
    c = next(c for c in cells if c["algorithm"] == "fedprox" and c["seed"] == 1)
    assert c == {
        "experiment": "e", "dataset": "digits", "partition": "iid", "algorithm": "fedprox", "seed": 1,
        "algorithm_name": "fedprox", "hparams": {"mu": 0.1}, "model": {"name": "logreg"},
        "local": {"epochs": 1, "steps": None, "batch_size": 16, "lr": 0.05, "lr_decay": 1.0,
                  "weight_decay": 0.0, "clip_norm": None},
        "sampling": {"scheme": "uniform", "participation": 1.0},
        "rounds": 3, "eval_every": 1, "target_accuracy": None, "paper": None, "dtype": "float32", "sweep": None,
        "dataset_dir": layout.dataset_dir("digits", datasets(tiny())["digits"]),
        "partition_dir": layout.partition_dir("digits", datasets(tiny())["digits"], "iid",
                                              partitions(tiny())[("digits", "iid")], 1),
    }
    # order: experiment, dataset, partition, algorithm, seed
    assert [(c["algorithm"], c["seed"]) for c in cells] == [("fedavg", 0), ("fedavg", 1),
                                                             ("fedprox", 0), ("fedprox", 1)]


def test_hparam_and_model_defaults_are_filled():
    cfg = copy.deepcopy(DEFAULT)
    cells = expand_cells(cfg)
    m = next(c for c in cells if c["algorithm"] == "fedavgm")
    from fedbench.algorithms import get_algorithm

    assert set(m["hparams"]) == set(get_algorithm("fedavgm").HPARAMS)
    assert m["hparams"]["momentum"] == 0.9
    assert m["model"] == {"name": "mlp", "hidden": [64]}
    syn = next(c for c in cells if c["dataset"] == "synthetic_1_1")
    assert syn["target_accuracy"] == 0.6  # per-dataset override
    assert syn["model"]["name"] == "logreg"


def test_spec_repr_does_not_depend_on_key_order_or_number_spelling():
    a = tiny()
    b = tiny()
    e = b["experiments"]["e"]
    e["local"] = {"lr": 0.05, "batch_size": 16, "epochs": 1, "weight_decay": 0}  # reordered; 0 vs 0.0
    e["algorithms"] = {"fedavg": None, "fedprox": {"mu": 1e-1}}
    assert [repr(c) for c in expand_cells(a)] == [repr(c) for c in expand_cells(b)]


def test_changing_one_hparam_changes_only_that_algorithms_specs():
    a, b = tiny(), tiny()
    b["experiments"]["e"]["algorithms"]["fedprox"]["mu"] = 0.5
    changed = {(x["algorithm"], x["seed"]) for x, y in zip(expand_cells(a), expand_cells(b)) if x != y}
    assert changed == {("fedprox", 0), ("fedprox", 1)}


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


def test_datasets_and_partitions_are_resolved_with_defaults():
    ds = datasets(copy.deepcopy(DEFAULT))
    assert ds["digits"]["source"] == "digits" and "test_fraction" in ds["digits"]
    assert ds["synthetic_1_1"]["alpha"] == 1.0 and ds["synthetic_1_1"]["beta"] == 1.0
    parts = partitions(copy.deepcopy(DEFAULT))
    assert set(parts) == {("digits", "iid"), ("digits", "dir0.3"), ("synthetic_1_1", "natural")}
    assert parts[("digits", "dir0.3")]["scheme"] == "dirichlet" and parts[("digits", "dir0.3")]["alpha"] == 0.3


def test_device_is_not_part_of_the_spec():
    cfg = tiny()
    cfg["device"] = "cuda"
    assert all("device" not in c for c in expand_cells(cfg))
    assert expand_cells(cfg) == expand_cells(tiny())


def test_the_same_partition_id_with_the_same_params_may_be_shared():
    cfg = tiny()
    cfg["experiments"]["f"] = copy.deepcopy(cfg["experiments"]["e"])
    assert len(expand_cells(cfg)) == 8
    assert len(partitions(cfg)) == 1


# ------------------------------------------------------------------------------ rejected inputs


def test_unknown_algorithm():
    cfg = tiny()
    cfg["experiments"]["e"]["algorithms"]["fedfoo"] = {}
    rejects(cfg, "experiments.e.algorithms.fedfoo", "unknown algorithm 'fedfoo'", "fedavg")
    cfg = tiny()
    cfg["experiments"]["e"]["algorithms"]["x"] = {"algorithm": "nope"}
    rejects(cfg, "experiments.e.algorithms.x.algorithm", "unknown algorithm 'nope'")


def test_unknown_dataset_source():
    cfg = tiny()
    cfg["datasets"]["digits"]["source"] = "mnist-zip"
    rejects(cfg, "datasets.digits.source", "unknown dataset source 'mnist-zip'", "synthetic")


def test_unknown_dataset_parameter():
    cfg = tiny()
    cfg["datasets"]["digits"]["gamma"] = 1
    rejects(cfg, "datasets.digits.gamma", "unknown parameter")


def test_unknown_dataset_id_in_experiment():
    cfg = tiny()
    cfg["experiments"]["e"]["datasets"]["cifar"] = {"model": "logreg", "partitions": {"iid": {"scheme": "iid"}}}
    rejects(cfg, "experiments.e.datasets.cifar", "unknown dataset id 'cifar'", "datasets:")


def test_unknown_partition_scheme():
    cfg = tiny()
    cfg["experiments"]["e"]["datasets"]["digits"]["partitions"]["iid"]["scheme"] = "pathological"
    rejects(cfg, "experiments.e.datasets.digits.partitions.iid.scheme", "unknown partition scheme", "dirichlet")


def test_unknown_model():
    cfg = tiny()
    cfg["experiments"]["e"]["datasets"]["digits"]["model"] = {"name": "resnet18"}
    rejects(cfg, "experiments.e.datasets.digits.model.name", "unknown model 'resnet18'", "logreg")


def test_unknown_model_option():
    cfg = tiny()
    cfg["experiments"]["e"]["datasets"]["digits"]["model"] = {"name": "logreg", "hidden": [3]}
    rejects(cfg, "experiments.e.datasets.digits.model.hidden", "unknown parameter")


def test_unknown_hyperparameter():
    cfg = tiny()
    cfg["experiments"]["e"]["algorithms"]["fedprox"]["momentum"] = 0.9
    rejects(cfg, "experiments.e.algorithms.fedprox.momentum", "unknown hyperparameter for algorithm 'fedprox'", "mu")


def test_local_setting_given_as_hyperparameter_points_to_local():
    cfg = tiny()
    cfg["experiments"]["e"]["algorithms"]["fedavg"]["lr"] = 0.1
    rejects(cfg, "experiments.e.algorithms.fedavg.lr", "local:")


def test_negative_hyperparameter_message():
    cfg = tiny()
    cfg["experiments"]["e"]["algorithms"]["fedprox"]["mu"] = -1
    msg = rejects(cfg)
    assert msg == "experiments.e.algorithms.fedprox.mu: must be >= 0 (got -1)"


@pytest.mark.parametrize("algorithms, local, fragments", [
    ({"fedac": {}}, {}, ["experiments.e.algorithms.fedac: fedac: needs a fixed number of local steps K"]),
    ({"fedac": {"variant": "III"}}, {"steps": 3}, ["experiments.e.algorithms.fedac.variant:", "got 'III'"]),
    ({"fedac": {}}, {"steps": 3, "clip_norm": 1.0}, ["experiments.e.algorithms.fedac:", "clipping"]),
    ({"fedac": {}}, {"steps": 3, "weight_decay": 0.0}, ["experiments.e.algorithms.fedac:", "μ must be"]),
    ({"mb_ac_sgd": {"beta_formula": "x"}}, {}, ["experiments.e.algorithms.mb_ac_sgd.beta_formula:"]),
    ({"mb_sgd": {}}, {"clip_norm": 1.0}, ["experiments.e.algorithms.mb_sgd:", "clipping"]),
    ({"elastic_fedavg": {"sensitivity": "x"}}, {}, ["experiments.e.algorithms.elastic_fedavg.sensitivity:"]),
])
def test_an_algorithms_own_check_runs_before_any_job(algorithms, local, fragments):
    """check_cell (the algorithm's own check of a cell's settings) is made by the config check."""
    cfg = tiny()
    ecfg = cfg["experiments"]["e"]
    ecfg["algorithms"] = algorithms
    base = {"batch_size": 16, "lr": 0.05, "weight_decay": 0.001}
    ecfg["local"] = {**base, **local} if "steps" in local else {**base, "epochs": 1, **local}
    rejects(cfg, *fragments)
    ok = tiny()
    ok["experiments"]["e"]["algorithms"] = {"fedac": {}, "mb_ac_sgd": {}, "mb_sgd": {}, "elastic_fedavg": {}}
    ok["experiments"]["e"]["local"] = {**base, "steps": 3}
    assert len(expand_cells(ok)) == 8


def test_wrong_hyperparameter_type():
    cfg = tiny()
    cfg["experiments"]["e"]["algorithms"]["fedprox"]["mu"] = "small"
    rejects(cfg, "experiments.e.algorithms.fedprox.mu", "must be a number")


@pytest.mark.parametrize("alpha", [0, -0.5])
def test_dirichlet_alpha_must_be_positive(alpha):
    cfg = tiny()
    cfg["experiments"]["e"]["datasets"]["digits"]["partitions"]["dir"] = {"scheme": "dirichlet", "alpha": alpha}
    rejects(cfg, "experiments.e.datasets.digits.partitions.dir.alpha", "must be > 0")


@pytest.mark.parametrize("p", [0, 1.5, -0.1])
def test_participation_outside_unit_interval(p):
    cfg = tiny()
    cfg["experiments"]["e"]["sampling"] = {"scheme": "uniform", "participation": p}
    rejects(cfg, "experiments.e.sampling.participation")


def test_participation_override_is_named_at_its_level():
    cfg = tiny()
    cfg["experiments"]["e"]["datasets"]["digits"]["sampling"] = {"participation": 2}
    rejects(cfg, "experiments.e.datasets.digits.sampling.participation", "<= 1")


def test_unknown_sampling_scheme():
    cfg = tiny()
    cfg["experiments"]["e"]["sampling"] = {"scheme": "poisson"}
    rejects(cfg, "experiments.e.sampling.scheme", "uniform, bernoulli")


def test_negative_lr():
    cfg = tiny()
    cfg["experiments"]["e"]["local"]["lr"] = -0.1
    rejects(cfg, "experiments.e.local.lr", "must be > 0 (got -0.1)")


def test_negative_lr_in_algorithm_override():
    cfg = tiny()
    cfg["experiments"]["e"]["algorithms"]["fedavg"]["local"] = {"lr": -1}
    rejects(cfg, "experiments.e.algorithms.fedavg.local.lr")


def test_zero_rounds():
    cfg = tiny()
    cfg["experiments"]["e"]["rounds"] = 0
    rejects(cfg, "experiments.e.rounds", "must be >= 1 (got 0)")


def test_zero_rounds_in_dataset_override():
    cfg = tiny()
    cfg["experiments"]["e"]["datasets"]["digits"]["rounds"] = 0
    rejects(cfg, "experiments.e.datasets.digits.rounds")


def test_rounds_wrong_type():
    cfg = tiny()
    cfg["experiments"]["e"]["rounds"] = 2.5
    rejects(cfg, "experiments.e.rounds", "integer")


def test_epochs_and_steps_both_given():
    cfg = tiny()
    cfg["experiments"]["e"]["local"]["steps"] = 5
    rejects(cfg, "experiments.e.local", "exactly one of epochs or steps")


def test_epochs_and_steps_neither_given():
    cfg = tiny()
    del cfg["experiments"]["e"]["local"]["epochs"]
    rejects(cfg, "experiments.e.local", "exactly one of", "neither")


def test_same_partition_id_with_different_params():
    cfg = tiny()
    cfg["experiments"]["f"] = copy.deepcopy(cfg["experiments"]["e"])
    cfg["experiments"]["f"]["datasets"]["digits"]["partitions"]["iid"]["num_clients"] = 7
    rejects(cfg, "experiments.f.datasets.digits.partitions.iid", "experiments.e.datasets.digits.partitions.iid",
            "different parameters")


def test_bad_ids_are_rejected():
    cfg = tiny()
    cfg["experiments"]["e"]["datasets"]["digits"]["partitions"]["a/b"] = {"scheme": "iid"}
    rejects(cfg, "partitions.a/b", "must match")


def test_unknown_keys_are_rejected():
    cfg = tiny()
    cfg["experiments"]["e"]["round"] = 3
    rejects(cfg, "experiments.e.round", "unknown key")
    cfg = tiny()
    cfg["experiments"]["e"]["local"]["learning_rate"] = 3
    rejects(cfg, "experiments.e.local.learning_rate", "unknown key")


def test_bad_device_and_dtype():
    cfg = tiny()
    cfg["device"] = "tpu"
    rejects(cfg, "device", "auto, cpu, cuda")
    cfg = tiny()
    cfg["dtype"] = "float16"
    rejects(cfg, "dtype", "float32, float64")


def test_seeds_must_be_distinct_non_negative_integers():
    for seeds, frag in (([], "non-empty"), ([0, 0], "distinct"), ([-1], "seeds[0]"), ([0.5], "integer")):
        cfg = tiny()
        cfg["experiments"]["e"]["seeds"] = seeds
        rejects(cfg, "experiments.e.seeds", frag)


def test_target_accuracy_range():
    cfg = tiny()
    cfg["experiments"]["e"]["target_accuracy"] = 90
    rejects(cfg, "experiments.e.target_accuracy", "<= 1")


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)
    assert re.match(r"^[A-Za-z]", rejects({"experiments": {}}, "experiments"))


def test_runtime_keys_are_checked_but_not_in_specs():
    cfg = tiny()
    cfg.update(engine="sequential", chunk_size=8, data={"mirror": "/srv/mirror"}, device="cpu")
    assert expand_cells(cfg) == expand_cells(tiny())
    cfg["chunk_size"] = "auto"
    check_config(cfg)
    for key, value, fragment in (("engine", "turbo", "vectorized, sequential"), ("chunk_size", 0, ">= 1"),
                                 ("data", {"mirrors": "x"}, "data.mirrors")):
        bad = tiny()
        bad[key] = value
        rejects(bad, key, fragment)


def test_downloaded_source_values_are_checked_before_any_download():
    cfg = tiny()
    cfg["datasets"]["cifar"] = {"source": "cifar10", "augment": "yes"}
    rejects(cfg, "datasets.cifar", "augment")


# ------------------------------------------------------------------------------ runtime blocks


def test_train_resources_defaults_and_precedence():
    from fedbench.config import RESOURCE_DEFAULTS, train_resources

    cfg = tiny()
    assert train_resources(cfg) == {("e", "digits"): RESOURCE_DEFAULTS}
    cfg["experiments"]["e"]["resources"] = {"runtime": 120, "cpus": 4}
    cfg["experiments"]["e"]["datasets"]["digits"]["resources"] = {"gpus": 1, "mem_mb": 16000, "slurm_partition": "gpu"}
    res = train_resources(cfg)[("e", "digits")]
    assert res == {"runtime": 120, "mem_mb": 16000, "cpus": 4, "gpus": 1, "gres": None, "slurm_partition": "gpu"}
    assert expand_cells(cfg) == expand_cells(tiny())  # runtime only: never in a cell spec


@pytest.mark.parametrize("resources, fragment", [
    ({"cpus": 0}, "experiments.e.resources.cpus: must be >= 1"),
    ({"gpus": -1}, "experiments.e.resources.gpus: must be >= 0"),
    ({"runtime": 1.5}, "experiments.e.resources.runtime: must be an integer"),
    ({"gres": "gpu 1"}, "experiments.e.resources.gres: must look like"),
    ({"gpu": 1}, "experiments.e.resources.gpu: unknown key"),
])
def test_bad_resources(resources, fragment):
    cfg = tiny()
    cfg["experiments"]["e"]["resources"] = resources
    rejects(cfg, fragment)


def test_wandb_and_tables_blocks():
    from fedbench.config import table_settings, wandb_settings

    cfg = tiny()
    assert wandb_settings(cfg) == {"enabled": False, "project": "fedbench", "entity": None, "mode": "offline"}
    assert table_settings(cfg) == {"decimals": 2, "interval": "sd"}
    cfg.update(wandb={"enabled": True, "mode": "online", "entity": "lab"}, tables={"decimals": 1})
    cfg["experiments"]["e"]["paper"] = "fedelasticnet"
    check_config(cfg)
    assert wandb_settings(cfg)["project"] == "fedbench" and table_settings(cfg) == {"decimals": 1, "interval": "sd"}
    # the paper is carried by each cell for the paper outputs, and changes nothing else
    cells = expand_cells(cfg)
    assert [c.pop("paper") for c in cells] == ["fedelasticnet"] * len(cells)
    assert cells == [{k: v for k, v in c.items() if k != "paper"} for c in expand_cells(tiny())]
    for key, value, fragment in (("wandb", {"mode": "shared"}, "wandb.mode"),
                                 ("wandb", {"enable": True}, "wandb.enable"),
                                 ("tables", {"decimals": 9}, "tables.decimals: must be <= 6"),
                                 ("tables", {"interval": "ci90"}, "tables.interval: must be one of sd, ci95")):
        bad = tiny()
        bad[key] = value
        rejects(bad, fragment)
    bad = tiny()
    bad["experiments"]["e"]["paper"] = 3
    rejects(bad, "experiments.e.paper: must be a string")
    bad["experiments"]["e"]["paper"] = "FedElasticNet (Kim et al.)"  # a title, not a registry key
    rejects(bad, "experiments.e.paper: unknown paper 'FedElasticNet (Kim et al.)'; known papers: fedelasticnet, "
                 "elastic_aggregation")


def test_schema_accepts_the_runtime_blocks():
    from snakemake.utils import validate

    cfg = tiny()
    cfg.update(wandb={"enabled": True}, tables={"decimals": 3})
    cfg["experiments"]["e"]["resources"] = {"runtime": 10, "gpus": 1, "gres": "shard:1"}
    cfg["experiments"]["e"]["datasets"]["digits"]["resources"] = {"mem_mb": 500}
    cfg["experiments"]["e"]["paper"] = "p"
    validate(cfg, str(REPO / "workflow" / "schemas" / "config.schema.yaml"))
    assert cfg["wandb"] == {"enabled": True, "project": "fedbench", "entity": None, "mode": "offline"}
    assert cfg["experiments"]["e"]["datasets"]["digits"]["resources"] == {"mem_mb": 500}  # no defaults filled in


def test_job_resources_grow_with_the_attempt():
    from fedbench.config import RESOURCE_DEFAULTS, job_resources

    res = {**RESOURCE_DEFAULTS, "runtime": 45, "mem_mb": 3000, "cpus": 4, "gpus": 1, "gres": "shard:2"}
    assert job_resources(res) == {"runtime": 45, "mem_mb": 3000, "cpus_per_task": 4, "gpu": 1, "gres": "shard:2",
                                  "slurm_partition": None}
    third = job_resources(res, attempt=3)
    assert (third["runtime"], third["mem_mb"], third["cpus_per_task"], third["gpu"]) == (135, 9000, 4, 1)


# ------------------------------------------------------------------------------ augmentation


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
    from fedbench.engine.rounds.loop import spec_id

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


def test_trust_mirror_checksums_is_a_checked_runtime_flag():
    cfg = tiny()
    cfg["data"] = {"mirror": "/tmp/m", "trust_mirror_checksums": True}
    check_config(cfg)
    assert all("data" not in c for c in expand_cells(cfg))
    cfg["data"] = {"mirror": "/tmp/m", "trust_mirror_checksums": "yes"}
    rejects(cfg, "data.trust_mirror_checksums", "true or false")
    cfg["data"] = {"trust_mirror_checksums": True}
    rejects(cfg, "data.trust_mirror_checksums", "data.mirror")


NEW_ALGORITHMS = ("fedelasticnet_prox", "fedelasticnet_scaffold", "fedelasticnet_feddyn", "elastic_fedavg",
                  "elastic_fedavgm", "elastic_fedprox", "fedadam", "fedyogi", "fedadagrad")


def test_issue4_algorithms_accept_their_defaults():
    cfg = tiny()
    cfg["experiments"]["e"]["algorithms"] = {name: {} for name in NEW_ALGORITHMS}
    cells = expand_cells(cfg)
    assert {c["algorithm"] for c in cells} == set(NEW_ALGORITHMS)


@pytest.mark.parametrize("name,key,value", [
    ("fedelasticnet_prox", "epsilon", -1e-3), ("fedelasticnet_feddyn", "lambda1", -1.0),
    ("elastic_fedavg", "rho", 1.0), ("elastic_fedavgm", "tau", -0.1), ("elastic_fedavgm", "dampening", 1.5),
    ("fedadam", "beta2", 1.0), ("fedyogi", "beta1", -0.1), ("fedadagrad", "server_lr", 0.0),
])
def test_issue4_hyperparameter_ranges(name, key, value):
    cfg = tiny()
    cfg["experiments"]["e"]["algorithms"][name] = {key: value}
    rejects(cfg, f"experiments.e.algorithms.{name}.{key}", "must be")


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


def test_stack_is_runtime_only_and_checked():
    from fedbench.config import stacked_experiments

    cfg = tiny()
    assert stacked_experiments(cfg) == {}
    cfg["experiments"]["e"]["stack"] = True
    cfg["experiments"]["f"] = copy.deepcopy(tiny()["experiments"]["e"])
    assert stacked_experiments(cfg) == {"e": 1}
    assert [c for c in expand_cells(cfg) if c["experiment"] == "e"] == expand_cells(tiny())  # never in a spec
    assert all("stack" not in c for c in expand_cells(cfg))
    cfg["experiments"]["e"]["seeds"] = [3]
    assert stacked_experiments(cfg) == {"e": 1}  # one seed: its sweep's cells may still stack
    cfg["experiments"]["e"]["stack_groups_per_job"] = 8
    assert stacked_experiments(cfg) == {"e": 8}
    assert all("stack_groups_per_job" not in c for c in expand_cells(cfg))
    cfg["experiments"]["e"]["stack_groups_per_job"] = 0
    rejects(cfg, "experiments.e.stack_groups_per_job")
    cfg["experiments"]["f"]["stack_groups_per_job"] = 2  # f does not stack
    cfg["experiments"]["e"]["stack_groups_per_job"] = 1
    rejects(cfg, "experiments.f.stack_groups_per_job", "stack: false", "set stack: true")
    del cfg["experiments"]["f"]["stack_groups_per_job"]
    cfg["experiments"]["e"]["stack"] = "yes"
    rejects(cfg, "experiments.e.stack", "true or false", "'yes'")
    assert stacked_experiments(copy.deepcopy(DEFAULT)) == {"baselines": 1}


def test_the_old_stack_seeds_key_names_its_replacement():
    cfg = tiny()
    cfg["experiments"]["e"]["stack_seeds"] = True
    msg = rejects(cfg, "experiments.e.stack_seeds: renamed to `stack`", "write `stack: true` instead")
    assert msg.startswith("experiments.e.stack_seeds:")


# ------------------------------------------------------------------------------ spec ids stay put

# spec_id (the hparams_id of a cell's results) of some cells, computed before the config refactor
# of issue "A house ready for three more papers": refactoring the config must not change them.
PINNED_SPEC_IDS = {
    "config/config.yaml": {
        "baselines/digits/iid/fedavg/0": "c1fc7b0282ac",
        "baselines/digits/iid/fedavgm/0": "fb39606ef844",
        "baselines/digits/iid/fedprox/0": "7640e903ba9b",
        "baselines/digits/iid/scaffold/0": "a302579ad7f2",
        "baselines/digits/dir0.3/feddyn/0": "3fdcc387b792",
        "baselines/synthetic_1_1/natural/fedavg/0": "7b64fc1f8f9b",
        "baselines/synthetic_1_1/natural/feddyn/0": "1f85f8879a91",
    },
    "config/experiments/fedelasticnet_quick.yaml": {
        "fedelasticnet_quick_p10/digits/iid/fedelasticnet_prox/0": "f5dfa9ca7cdb",
        "fedelasticnet_quick_p10/digits/iid/fedelasticnet_scaffold/0": "4decfdf56d81",
        "fedelasticnet_quick_p100/digits/iid/fedelasticnet_feddyn/0": "0c5b184e0019",
    },
    "config/experiments/elastic_aggregation_quick.yaml": {
        "elastic_aggregation_quick/digits/iid/elastic_fedavg_average/0": "9303bc04b2cb",
        "elastic_aggregation_quick/digits/iid/elastic_fedavgm/0": "c16a20f7ac04",
        "elastic_aggregation_quick/digits/iid/elastic_fedprox/0": "390376abfc6c",
        "elastic_aggregation_quick/digits/iid/fedadam/0": "cdbf3930a605",
    },
}


@pytest.mark.parametrize("path", sorted(PINNED_SPEC_IDS))
def test_spec_ids_of_known_cells_are_unchanged(path):
    from fedbench.engine.rounds.loop import spec_id

    cells = expand_cells(yaml.safe_load((REPO / path).read_text()))
    from fedbench.config import training_spec

    ids = {"/".join(str(c[k]) for k in ("experiment", "dataset", "partition", "algorithm", "seed")):
           spec_id(training_spec(c)) for c in cells}
    assert all(c["sweep"] is None and "sweep" not in training_spec(c) for c in cells)
    assert {k: ids.get(k) for k in PINNED_SPEC_IDS[path]} == PINNED_SPEC_IDS[path]


def test_training_spec_is_the_cell_less_its_report_and_path_keys():
    from fedbench.config import PATH_KEYS, REPORT_KEYS, training_spec

    for c in expand_cells(copy.deepcopy(DEFAULT)):
        spec = training_spec(c)
        assert set(spec) == set(c) - set(REPORT_KEYS) - set(PATH_KEYS) and all(spec[k] == c[k] for k in spec)
        assert list(spec) == [k for k in c if k not in REPORT_KEYS + PATH_KEYS]  # the cell's key order


def test_every_algorithm_states_its_bounds_next_to_its_defaults():
    from fedbench.algorithms import ALGORITHMS, get_algorithm

    for name in ALGORITHMS:
        module = get_algorithm(name)
        assert set(module.BOUNDS) <= set(module.HPARAMS), name
        assert all(re.fullmatch(r"[\[(](-?[\d.e-]+|-inf), ([\d.e-]+|inf)[\])]", b) for b in module.BOUNDS.values())


def test_the_same_hyperparameter_name_may_have_different_bounds_per_algorithm():
    cfg = tiny()
    cfg["experiments"]["e"]["algorithms"]["elastic_fedavg"] = {"tau": 0.0}  # Elastic Aggregation's offset τ ≥ 0
    check_config(cfg)
    cfg["experiments"]["e"]["algorithms"]["fedadam"] = {"tau": 0.0}  # FedAdam's adaptivity τ > 0
    rejects(cfg, "experiments.e.algorithms.fedadam.tau: must be > 0 (got 0)")


def test_schema_errors_name_the_key_path_and_what_is_allowed():
    cfg = tiny()
    cfg["foo"] = 1
    rejects(cfg, "foo: unknown key; allowed keys here:", "experiments")
    cfg = tiny()
    del cfg["experiments"]["e"]["rounds"]
    rejects(cfg, "experiments.e.rounds: missing")
    cfg = tiny()
    cfg["chunk_size"] = "big"
    rejects(cfg, "chunk_size: must be an integer >= 1, 'auto' or null (got 'big')")
    cfg = tiny()
    del cfg["datasets"]["digits"]["source"]
    rejects(cfg, "datasets.digits.source: missing", "digits, synthetic")
    assert check_config(validated_copy := copy.deepcopy(tiny())) is None and validated_copy == tiny()  # not modified


# ------------------------------------------------------------------------------ command line, files, seeds


def test_nested_command_line_values_are_typed_as_the_schema_says():
    from fedbench.config import typed_overrides

    # what Snakemake hands over for --config wandb='{enabled: true, mode: offline}' (YAML BaseLoader)
    given = {"wandb": {"enabled": "true", "mode": "offline"}, "engine": "null", "chunk_size": "auto",
             "data": {"mirror": "/some/dir", "trust_mirror_checksums": "true"},
             "experiments": {"e": {"seeds": ["0", "1"], "rounds": "3", "target_accuracy": "0.5", "paper": "12",
                                   "local": {"lr": "0.1", "epochs": "1", "clip_norm": "null"},
                                   "delta_histogram": {"rounds": ["1", "last"]}}}}
    typed = typed_overrides(given)
    assert typed["wandb"] == {"enabled": True, "mode": "offline"}
    assert typed["data"] == {"mirror": "/some/dir", "trust_mirror_checksums": True}
    assert typed["engine"] is None and typed["chunk_size"] == "auto"
    e = typed["experiments"]["e"]
    assert e["seeds"] == [0, 1] and e["rounds"] == 3 and e["target_accuracy"] == 0.5
    assert e["paper"] == "12"  # the schema wants a string there: left alone
    assert e["local"] == {"lr": 0.1, "epochs": 1, "clip_norm": None}
    assert e["delta_histogram"] == {"rounds": [1, "last"]}
    assert given["wandb"]["enabled"] == "true"  # not modified
    # what does not parse to an allowed type is left for the schema to reject
    assert typed_overrides({"wandb": {"enabled": "yes please"}}) == {"wandb": {"enabled": "yes please"}}
    cfg = tiny()
    cfg["wandb"] = typed_overrides({"wandb": {"enabled": "maybe"}})["wandb"]
    rejects(cfg, "wandb.enabled: must be true or false (got 'maybe')")


def test_a_config_file_with_a_duplicate_key_is_rejected_with_file_line_and_key(tmp_path):
    from fedbench.config import load_yaml_strict

    path = tmp_path / "c.yaml"
    path.write_text("experiments:\n  e:\n    local:\n      lr: 0.1\n      batch_size: 8\n      lr: 0.2\n")
    with pytest.raises(ConfigError) as info:
        load_yaml_strict(path)
    assert f"{path}:6: key 'lr' given twice in one mapping (first at line 4)" in str(info.value)
    # the same key in different mappings, and a merge key overridden, are fine
    path.write_text("a: {lr: 1}\nb: {lr: 2}\nbase: &b {x: 1}\nm:\n  <<: *b\n  x: 2\n")
    assert load_yaml_strict(path)["m"] == {"x": 2}
    assert load_yaml_strict(REPO / "config" / "config.yaml") == DEFAULT


def test_seeds_must_fit_in_64_bit_signed_integers():
    cfg = tiny()
    cfg["experiments"]["e"]["seeds"] = [0, 2**64]
    rejects(cfg, "experiments.e.seeds[1]: must be < 9223372036854775808 (got 18446744073709551616)")
    cfg["experiments"]["e"]["seeds"] = [0, 2**63 - 1]
    check_config(cfg)


# ------------------------------------------------------------------------------ sizes and ranges before any job


def _digits_partition(**p) -> dict:
    cfg = tiny()
    cfg["experiments"]["e"]["datasets"]["digits"]["partitions"] = {"p": p}
    return cfg


P = "experiments.e.datasets.digits.partitions.p"


@pytest.mark.parametrize("k", [5000, 10**12])
def test_more_clients_than_train_samples_is_rejected(k):
    rejects(_digits_partition(scheme="iid", num_clients=k),
            f"{P}.num_clients: num_clients={k} exceeds the 1437 train samples", "at most 1437")
    check_config(_digits_partition(scheme="iid", num_clients=1437))


def test_test_fraction_must_be_a_share():
    cfg = tiny()
    cfg["datasets"]["digits"]["test_fraction"] = 1.5
    rejects(cfg, "datasets.digits.test_fraction: must be < 1 (got 1.5)")
    cfg["datasets"]["digits"]["test_fraction"] = 0.0
    rejects(cfg, "datasets.digits.test_fraction: must be > 0 (got 0)")
    cfg["datasets"]["digits"]["test_fraction"] = 0.5  # 898 train images
    cfg["experiments"]["e"]["datasets"]["digits"]["partitions"]["iid"]["num_clients"] = 899
    rejects(cfg, "num_clients=899 exceeds the 898 train samples")


def test_more_shards_than_samples_is_rejected():
    rejects(_digits_partition(scheme="shards", num_clients=100, shards_per_client=20),
            f"{P}.shards_per_client: num_clients·shards_per_client = 100·20 = 2000 shards exceed the 1437",
            "at most 14")


def test_lognormal_sigma_is_bounded():
    rejects(_digits_partition(scheme="iid", num_clients=10, sigma=50), f"{P}.sigma: must be <= 5 (got 50)")
    check_config(_digits_partition(scheme="dirichlet", num_clients=10, sigma=0.3))


def test_min_size_beyond_the_data_is_rejected():
    rejects(_digits_partition(scheme="dirichlet", num_clients=10, min_size=200),
            f"{P}.min_size: min_size=200 with num_clients=10 needs 2000 train samples but the dataset has 1437",
            "at most 143")


def test_sizes_of_downloaded_and_generated_sources():
    cfg = tiny()
    cfg["datasets"] = {"emnist": {"source": "emnist"}, "fed": {"source": "fed_cifar100"},
                       "syn": {"source": "synthetic", "num_clients": 20, "max_samples_per_client": 100}}
    cfg["experiments"]["e"]["datasets"] = {
        "emnist": {"model": "logreg", "partitions": {"p": {"scheme": "iid", "num_clients": 48_001}}}}
    rejects(cfg, "experiments.e.datasets.emnist.partitions.p.num_clients: num_clients=48001 exceeds the 48000")
    cfg["experiments"]["e"]["datasets"] = {
        "fed": {"model": "logreg", "partitions": {"p": {"scheme": "natural", "num_clients": 501}}}}
    rejects(cfg, "experiments.e.datasets.fed.partitions.p.num_clients: num_clients=501 but the dataset has at most "
                 "500 natural clients")
    from fedbench.data.registry import build_dataset

    n = len(build_dataset("syn", cfg["datasets"]["syn"]).y_train)  # the exact count, drawn from the seed
    cfg["experiments"]["e"]["datasets"] = {
        "syn": {"model": "logreg", "partitions": {"p": {"scheme": "iid", "num_clients": n + 1}}}}
    rejects(cfg, f"num_clients={n + 1} exceeds the {n} train samples")
    cfg["experiments"]["e"]["datasets"]["syn"]["partitions"]["p"]["num_clients"] = n
    check_config(cfg)


def _one_dataset(source: dict, model: str, **partition) -> dict:
    cfg = tiny()
    cfg["datasets"] = {"x": source}
    cfg["experiments"]["e"]["datasets"] = {"x": {"model": model, "partitions": {"p": partition}}}
    return cfg


X = "experiments.e.datasets.x.partitions.p"


def test_synthetic_without_a_cap_is_counted_before_any_job():
    """Synthetic without max_samples_per_client: its train size is drawn from the seed before any
    job (the exact count generate_synthetic gives), so a partition asking for more is rejected."""
    from fedbench.data.registry import build_dataset

    for law in ({}, {"size_distribution": "powerlaw"}):
        source = {"source": "synthetic", "num_clients": 10, "max_samples_per_client": None, **law}
        n = len(build_dataset("x", source).y_train)
        rejects(_one_dataset(source, "logreg", scheme="iid", num_clients=n + 1),
                f"{X}.num_clients: num_clients={n + 1} exceeds the {n} train samples", f"at most {n}")
        check_config(_one_dataset(source, "logreg", scheme="iid", num_clients=n))
        rejects(_one_dataset(source, "logreg", scheme="natural", num_clients=11),
                f"{X}.num_clients: num_clients=11 but the dataset has at most 10 natural clients")


def test_synthetic_parameters_are_checked_before_any_job():
    syn = {"source": "synthetic", "num_clients": 5}
    rejects(_one_dataset({**syn, "size_distribution": "zipf"}, "logreg", scheme="natural"),
            "datasets.x.size_distribution: synthetic: size_distribution must be one of lognormal, powerlaw")
    rejects(_one_dataset({**syn, "min_samples_per_client": 1}, "logreg", scheme="natural"),
            "datasets.x.min_samples_per_client: synthetic: min_samples_per_client must be an integer >= 2")
    rejects(_one_dataset({**syn, "size_mean": 800.0, "max_samples_per_client": None}, "logreg", scheme="natural"),
            "datasets.x.max_samples_per_client: synthetic: without max_samples_per_client",
            "set max_samples_per_client")
    check_config(_one_dataset({**syn, "size_mean": 800.0}, "logreg", scheme="natural"))  # capped: every client 1000


def test_shakespeare_sizes_are_bounded_before_any_job():
    """Shakespeare cannot be counted before pg100.txt is parsed; its safe upper bounds
    (fedbench.data.registry.SHAKESPEARE_MAX_SAMPLES, SHAKESPEARE_MAX_CLIENTS and the filters)
    still reject what no edition can give."""
    from fedbench.data.registry import SHAKESPEARE_MAX_CLIENTS, SHAKESPEARE_MAX_SAMPLES

    sh = {"source": "shakespeare"}
    rejects(_one_dataset(sh, "lstm", scheme="natural", num_clients=5000),
            f"{X}.num_clients: num_clients=5000 but the dataset has at most {SHAKESPEARE_MAX_CLIENTS} natural clients")
    rejects(_one_dataset(sh, "lstm", scheme="iid", num_clients=10**12),
            f"{X}.num_clients: num_clients={10**12} exceeds the {SHAKESPEARE_MAX_SAMPLES} train samples")
    feddyn = {**sh, "min_train_samples": 2000, "max_train_samples": 2000, "max_test_samples": 400}
    check_config(_one_dataset(feddyn, "lstm", scheme="natural", num_clients=100))  # FedDyn's setting
    rejects(_one_dataset({**sh, "min_train_samples": 10**6}, "lstm", scheme="natural", num_clients=9),
            f"num_clients=9 but the dataset has at most {SHAKESPEARE_MAX_SAMPLES // (10**6 + 1)} natural clients")
    rejects(_one_dataset(feddyn, "lstm", scheme="iid", num_clients=SHAKESPEARE_MAX_CLIENTS * 2000 + 1),
            f"exceeds the {SHAKESPEARE_MAX_CLIENTS * 2000} train samples")  # clients · max_train_samples


def test_fewer_shards_than_classes_is_rejected_before_any_job():
    """shards: each shard holds one class, so num_clients·shards_per_client must reach the number
    of classes (the partitioner's own check, made before any job for sources whose classes are known)."""
    rejects(_digits_partition(scheme="shards", num_clients=3, shards_per_client=3),
            f"{P}.shards_per_client: num_clients·shards_per_client = 3·3 = 9 shards cannot cover the 10 classes",
            "at least 4")
    check_config(_digits_partition(scheme="shards", num_clients=5, shards_per_client=2))
    rejects(_one_dataset({"source": "cifar100"}, "logreg", scheme="shards", num_clients=10, shards_per_client=9),
            f"{X}.shards_per_client: num_clients·shards_per_client = 10·9 = 90 shards cannot cover the 100 classes")
    check_config(_one_dataset({"source": "synthetic"}, "logreg", scheme="shards", num_clients=2,
                              shards_per_client=2))  # synthetic: which classes occur is not known before


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


def test_lr_schedule_can_be_swept():
    cfg = tiny()
    cfg["experiments"]["e"]["sweep"] = {"grid": {"local.lr_schedule": [None, {"milestones": [2]},
                                                                       {"milestones": [1, 2], "factor": 0.5}]}}
    got = sorted((c["algorithm"], repr(c["local"].get("lr_schedule"))) for c in expand_cells(cfg) if c["seed"] == 0)
    assert [a for a, _ in got if a.startswith("fedavg")] == [
        "fedavg,lr_schedule=null", "fedavg,lr_schedule=step1-2x0.5", "fedavg,lr_schedule=step2x0.1"]
    assert dict(got)["fedavg,lr_schedule=step2x0.1"] == repr({"milestones": [2], "factor": 0.1})
    assert dict(got)["fedavg,lr_schedule=null"] == "None"


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


def test_shared_partition_may_have_more_clients_than_rows():
    """``shared``: every client holds all 1,437 digits rows, so 8,192 clients are fine."""
    cells = expand_cells(_digits_partition(scheme="shared", num_clients=8192))
    assert {c["partition"] for c in cells} == {"p"}
    assert partitions(_digits_partition(scheme="shared", num_clients=8192))[("digits", "p")] == {
        "scheme": "shared", "num_clients": 8192}
    rejects(_digits_partition(scheme="shared", num_clients=0), f"{P}")
    rejects(_digits_partition(scheme="shared", alpha=0.3), f"{P}", "alpha")


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


# ------------------------------------------------------------------------------ sweeps (issue 16)


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
    from fedbench.engine.rounds.loop import spec_id

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


# ------------------------------------------------------------------------------ heterogeneous local work


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


# ------------------------------------------------------------------------------ minimax cells


def _minimax(model_minimax, algorithms):
    cfg = tiny()
    e = cfg["experiments"]["e"]
    e["datasets"]["digits"]["model"] = {"name": "logreg", **({"minimax": model_minimax} if model_minimax else {})}
    e["algorithms"] = algorithms
    return cfg


def test_minimax_cells_resolve_with_the_paper_table():
    """Sharma, Panda & Joshi (TMLR 2023) §6: Local SGDA, with momentum 0.9, Fed-Norm-SGDA, on fair
    classification (projection onto the simplex), τ_i ~ Uniform{2..5} epochs."""
    cfg = _minimax({"problem": "fair"}, {"local_sgda": {"projection": "simplex"},
                                         "local_sgda_m": {"algorithm": "local_sgda", "momentum": 0.9,
                                                          "projection": "simplex"},
                                         "fed_norm_sgda": {"projection": "simplex"}})
    cfg["experiments"]["e"]["local"]["epochs"] = {"distribution": "uniform", "low": 2, "high": 5}
    cells = {c["algorithm"]: c for c in expand_cells(cfg) if c["seed"] == 0}
    assert cells["local_sgda_m"]["hparams"]["momentum"] == 0.9
    assert cells["fed_norm_sgda"]["model"] == {"name": "logreg", "minimax": {"problem": "fair", "lambda": 0.1,
                                                                               "empty_classes": "zero"}}
    assert cells["fed_norm_sgda"]["hparams"] == {"y_lr_scale": 1.0, "momentum": 0.0, "projection": "simplex",
                                                 "radius": 1.0, "p": "samples", "estimator": "unbiased",
                                                 "server_lr": 1.0, "tau_eff": "sampled"}
    robust = _minimax({"problem": "robust"}, {"fed_norm_sgda_plus": {"projection": "ball", "snapshot_period": 5}})
    (c,) = [c for c in expand_cells(robust) if c["seed"] == 0]
    assert c["hparams"]["snapshot_period"] == 5 and c["model"]["minimax"] == {"problem": "robust"}


def test_minimax_mismatches_are_rejected_with_the_key_path():
    rejects(_minimax({"problem": "fair"}, {"fedavg": {}}), "experiments.e.algorithms.fedavg: the model is a minimax",
            "use local_sgda")
    rejects(_minimax(None, {"local_sgda": {}}), "experiments.e.algorithms.local_sgda: algorithm 'local_sgda' is a "
            "minimax algorithm")
    rejects(_minimax({"problem": "fair"}, {"local_sgda": {"projection": "ball"}}),
            "experiments.e.algorithms.local_sgda.projection: the minimax problem 'fair'", "projection: simplex")
    rejects(_minimax({"problem": "fair"}, {"local_sgda": {"projection": "simplex", "estimator": "biased"}}),
            "experiments.e.algorithms.local_sgda", "estimator must be one of unbiased, sampled")
    rejects(_minimax({"problem": "fair"}, {"fed_norm_sgda_plus": {"projection": "simplex", "snapshot_period": 0}}),
            "experiments.e.algorithms.fed_norm_sgda_plus.snapshot_period")
    rejects(_minimax({"problem": "fair", "lambda": -1}, {"local_sgda": {"projection": "simplex"}}),
            "experiments.e.datasets.digits.model", "'lambda' must be a number >= 0")


def test_fed_minimax_quick_experiment_file():
    """Sharma et al. (TMLR 2023) §6 on digits: 2 problems × 3 algorithms × E ∈ {5, 7} × 3 seeds."""
    cells = expand_cells(yaml.safe_load((REPO / "config/experiments/fed_minimax_quick.yaml").read_text()))
    assert len(cells) == 36
    assert {c["local"]["epochs"]["high"] for c in cells} == {5, 7}
    assert {c["local"]["epochs"]["per"] for c in cells} == {"round"}
    by = {(c["experiment"], c["algorithm_name"], c["hparams"]["momentum"]) for c in cells}
    assert by == {("fed_minimax_fair_quick", "local_sgda", 0.0), ("fed_minimax_fair_quick", "local_sgda", 0.9),
                  ("fed_minimax_fair_quick", "fed_norm_sgda", 0.0),
                  ("fed_minimax_robust_quick", "local_sgda_plus", 0.0),
                  ("fed_minimax_robust_quick", "local_sgda_plus", 0.9),
                  ("fed_minimax_robust_quick", "fed_norm_sgda_plus", 0.0)}
    assert all(c["hparams"]["y_lr_scale"] == 1.25 for c in cells)
