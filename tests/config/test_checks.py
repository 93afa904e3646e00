"""fedbench.config.checks: registry entries, the algorithms' own rules and what the data allows,
rejected before any job with the key path and the fix."""

from __future__ import annotations

import re

import pytest
import yaml
from configs import REPO, rejects, tiny

from fedbench.config import check_config, expand_cells, partitions


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


def test_downloaded_source_values_are_checked_before_any_download():
    cfg = tiny()
    cfg["datasets"]["cifar"] = {"source": "cifar10", "augment": "yes"}
    rejects(cfg, "datasets.cifar", "augment")


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


def test_added_algorithms_accept_their_defaults():
    cfg = tiny()
    cfg["experiments"]["e"]["algorithms"] = {name: {} for name in NEW_ALGORITHMS}
    cells = expand_cells(cfg)
    assert {c["algorithm"] for c in cells} == set(NEW_ALGORITHMS)


@pytest.mark.parametrize("name,key,value", [
    ("fedelasticnet_prox", "epsilon", -1e-3), ("fedelasticnet_feddyn", "lambda1", -1.0),
    ("elastic_fedavg", "rho", 1.0), ("elastic_fedavgm", "tau", -0.1), ("elastic_fedavgm", "dampening", 1.5),
    ("fedadam", "beta2", 1.0), ("fedyogi", "beta1", -0.1), ("fedadagrad", "server_lr", 0.0),
])
def test_added_algorithms_hyperparameter_ranges(name, key, value):
    cfg = tiny()
    cfg["experiments"]["e"]["algorithms"][name] = {key: value}
    rejects(cfg, f"experiments.e.algorithms.{name}.{key}", "must be")


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


def test_shared_partition_may_have_more_clients_than_rows():
    """``shared``: every client holds all 1,437 digits rows, so 8,192 clients are fine."""
    cells = expand_cells(_digits_partition(scheme="shared", num_clients=8192))
    assert {c["partition"] for c in cells} == {"p"}
    assert partitions(_digits_partition(scheme="shared", num_clients=8192))[("digits", "p")] == {
        "scheme": "shared", "num_clients": 8192}
    rejects(_digits_partition(scheme="shared", num_clients=0), f"{P}")
    rejects(_digits_partition(scheme="shared", alpha=0.3), f"{P}", "alpha")


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
    """Sharma et al. (TMLR 2023) §6 on digits: 2 problems × 3 algorithms × E ∈ {5, 7} × 3 seeds, and the
    sweeps over P (× α) of Figs. 4 and 10."""
    every = expand_cells(yaml.safe_load((REPO / "config/experiments/fed_minimax_quick.yaml").read_text()))
    assert len(every) == 63
    cells = [c for c in every if c["experiment"] in ("fed_minimax_fair_quick", "fed_minimax_robust_quick")]
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
