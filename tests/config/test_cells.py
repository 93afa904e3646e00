"""fedbench.config.cells: the default suite expanded into cells, the cell specs, and spec ids that
must stay put."""

from __future__ import annotations

import copy

import pytest
import yaml
from configs import DEFAULT, REPO, SPEC_KEYS, rejects, tiny

from fedbench import layout
from fedbench.config import check_config, datasets, expand_cells, partitions


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
        "rounds": 3, "eval_every": 1, "target_accuracy": None, "paper": None, "scale": "toy data", "dtype": "float32",
        "sweep": None,
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


def test_same_partition_id_with_different_params():
    cfg = tiny()
    cfg["experiments"]["f"] = copy.deepcopy(cfg["experiments"]["e"])
    cfg["experiments"]["f"]["datasets"]["digits"]["partitions"]["iid"]["num_clients"] = 7
    rejects(cfg, "experiments.f.datasets.digits.partitions.iid", "experiments.e.datasets.digits.partitions.iid",
            "different parameters")


# spec_id (the hparams_id of a cell's results) of some cells, computed before a refactoring of the
# config: refactoring the config must not change them.
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
    # the paper's MNIST setting on mnist5k, Table 5's MNIST row (its header)
    "config/experiments/fedelasticnet_quick.yaml": {
        "fedelasticnet_quick_p10/mnist5k/iid/fedelasticnet_prox/0": "73d96d02e7e9",
        "fedelasticnet_quick_p10/mnist5k/dir0.3/fedelasticnet_scaffold/1": "86cde76eef0c",
        "fedelasticnet_quick_lambda1_sweep/mnist5k/dir0.3/alg3_l1_1e-2/2": "b69e1ca51745",
    },
    "config/experiments/elastic_aggregation_quick.yaml": {
        "elastic_aggregation_quick/mnist5k/iid/elastic_fedavg_average/0": "3b22e79adec6",
        "elastic_aggregation_quick/mnist5k/iid/elastic_fedavgm/0": "2c1c7fcb84eb",
        "elastic_aggregation_quick/mnist5k/dir0.3/elastic_fedprox/0": "1fb722ece121",
        "elastic_aggregation_quick/mnist5k/dir0.3/fedavg/3": "dbee55e57e0c",
    },
}


@pytest.mark.parametrize("path", sorted(PINNED_SPEC_IDS))
def test_spec_ids_of_known_cells_are_unchanged(path):
    from fedbench.engine.rounds.cell import spec_id

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


def test_cells_share_no_mutable_value():
    """Each cell is its own copy of the config's values (model, sampling, the sweep's grid): changing
    one cell, as a script may, changes no other cell and not the config."""
    config = yaml.safe_load((REPO / "config/experiments/fedac_quick.yaml").read_text())
    cells = expand_cells(config)
    swept = [c for c in cells if c["sweep"] is not None]
    first, second = swept[0], swept[1]
    assert first["sweep"]["grid"] == second["sweep"]["grid"] and first["model"] == second["model"]
    for container in ("model", "sampling", "local", "hparams"):
        assert first[container] is not second[container], container
    for axis, values in first["sweep"]["grid"].items():
        assert values is not second["sweep"]["grid"][axis], axis
    grid_before = copy.deepcopy(second["sweep"]["grid"])
    next(iter(first["sweep"]["grid"].values())).append("changed")
    first["model"]["name"] = "changed"
    assert second["sweep"]["grid"] == grid_before and second["model"]["name"] != "changed"
    assert expand_cells(config) == expand_cells(yaml.safe_load((REPO / "config/experiments/fedac_quick.yaml")
                                                                .read_text()))
