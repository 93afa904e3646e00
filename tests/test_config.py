"""fedbench.config: the default suite, every rejected input, and the cell specs."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from fedbench.config import ConfigError, check_config, datasets, expand_cells, partitions

REPO = Path(__file__).resolve().parents[1]
DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
SPEC_KEYS = {
    "experiment", "dataset", "partition", "algorithm", "seed", "algorithm_name", "hparams", "model",
    "local", "sampling", "rounds", "eval_every", "target_accuracy", "paper", "dtype",
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
        "rounds": 3, "eval_every": 1, "target_accuracy": None, "paper": None, "dtype": "float32",
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
    from fedbench.engine.loop import spec_id

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


def test_stack_seeds_is_runtime_only_and_checked():
    from fedbench.config import stacked_seeds

    cfg = tiny()
    assert stacked_seeds(cfg) == {}
    cfg["experiments"]["e"]["stack_seeds"] = True
    assert stacked_seeds(cfg) == {"e": [0, 1]}
    assert expand_cells(cfg) == expand_cells(tiny())  # never part of a cell spec
    cfg["experiments"]["e"]["seeds"] = [3]
    assert stacked_seeds(cfg) == {}  # one seed: nothing to stack
    cfg["experiments"]["e"]["stack_seeds"] = "yes"
    rejects(cfg, "experiments.e.stack_seeds", "true or false", "'yes'")


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
    from fedbench.engine.loop import spec_id

    cells = expand_cells(yaml.safe_load((REPO / path).read_text()))
    ids = {"/".join(str(c[k]) for k in ("experiment", "dataset", "partition", "algorithm", "seed")):
           spec_id({k: v for k, v in c.items() if k not in ("target_accuracy", "paper")}) for c in cells}
    assert {k: ids.get(k) for k in PINNED_SPEC_IDS[path]} == PINNED_SPEC_IDS[path]


def test_training_spec_is_the_cell_less_its_report_keys():
    from fedbench.config import REPORT_KEYS, training_spec

    for c in expand_cells(copy.deepcopy(DEFAULT)):
        spec = training_spec(c)
        assert set(spec) == set(c) - set(REPORT_KEYS) and all(spec[k] == c[k] for k in spec)
        assert list(spec) == [k for k in c if k not in REPORT_KEYS]  # the cell's key order


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
    cfg["experiments"]["e"]["datasets"] = {
        "syn": {"model": "logreg", "partitions": {"p": {"scheme": "iid", "num_clients": 1801}}}}
    rejects(cfg, "num_clients=1801 exceeds the 1800 train samples")  # 20 clients · int(0.9 · 100)


def test_collapse_rule_is_in_the_spec_only_when_set():
    from fedbench.engine.cell import COLLAPSE_DEFAULTS, collapse_rule, spec_id

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
