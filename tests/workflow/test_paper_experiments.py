"""The experiment files of FedElasticNet and Elastic Aggregation (config/experiments/):

- every file is a complete config that expands to the papers' grids (Table 5 hyperparameters,
  100 clients, the FedDyn-code Bernoulli sampler, rounds per dataset);
- a dry run of the full FedElasticNet file plans its 180 cells and the three paper tables;
- a real run of the full file without the data fails fast with "dataset not available", naming
  the files and ``data.mirror`` (an empty mirror directory: no network is used);
- the quick experiments, cut to 2 rounds and a few algorithms, run end to end from a temp dir and
  write the papers' tables with the paper's numbers beside ours (FedDyn's θ (Δ) entropy measured),
  Elastic Aggregation's boosted-% figure and FedElasticNet's Δ-histogram figure.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import polars as pl
import pytest
import yaml

from fedbench.config import expand_cells

from .test_snakemake import check_estimate, ok, planned_jobs, snakemake

EXP = Path(__file__).resolve().parents[2] / "config" / "experiments"


def load(name: str) -> dict:
    return yaml.safe_load((EXP / f"{name}.yaml").read_text())


@pytest.mark.parametrize("name, n_cells", [("fedelasticnet", 180), ("fedelasticnet_quick", 48),
                                           ("elastic_aggregation", 242), ("elastic_aggregation_quick", 56)])
def test_experiment_files_expand(name, n_cells):
    cfg = load(name)
    cells = expand_cells(cfg)
    assert len(cells) == n_cells
    assert all(cfg["experiments"][c["experiment"]].get("paper") for c in cells)
    assert {c["sampling"]["scheme"] for c in cells} == {"bernoulli"}


def test_fedelasticnet_grid_is_the_papers():
    cells = expand_cells(load("fedelasticnet"))
    main = [c for c in cells if c["experiment"] != "fedelasticnet_lambda1_sweep"]
    assert {c["sampling"]["participation"] for c in main} == {0.1, 1.0}
    rounds = {c["dataset"]: c["rounds"] for c in main}
    assert rounds == {"mnist": 100, "emnist_l": 200, "cifar10": 200, "cifar100": 500, "shakespeare": 100}
    batch = {c["dataset"]: c["local"]["batch_size"] for c in main}
    assert batch == {"mnist": 10, "emnist_l": 50, "cifar10": 50, "cifar100": 50, "shakespeare": 20}
    parts = {(c["dataset"], c["partition"]) for c in main}
    assert len(parts) == 14
    hp = {(c["dataset"], c["algorithm"]): c["hparams"] for c in main}
    assert hp[("mnist", "feddyn")]["alpha"] == 0.05
    assert hp[("emnist_l", "fedelasticnet_feddyn")] == {"lambda1": 1e-4, "lambda2": 4e-2, "epsilon": 2e-3}
    assert hp[("cifar100", "fedelasticnet_feddyn")]["epsilon"] == 1e-3
    assert hp[("shakespeare", "fedelasticnet_scaffold")] == {"server_lr": 1.0, "lambda1": 1e-6, "lambda2": 0.0,
                                                              "epsilon": 9e-4}
    assert hp[("cifar10", "fedelasticnet_prox")] == {"lambda1": 1e-6, "lambda2": 1e-4, "epsilon": 1e-3}
    assert hp[("mnist", "fedprox")]["mu"] == 1e-4
    sweep = [c for c in cells if c["experiment"] == "fedelasticnet_lambda1_sweep"]
    assert sorted({c["hparams"]["lambda1"] for c in sweep}) == [1e-8, 1e-6, 1e-4, 1e-2]


def test_dry_run_of_the_full_grid_plans_every_cell_and_the_paper_tables(tmp_path):
    proc = ok(snakemake(tmp_path, load("fedelasticnet"), "-n"))
    check_estimate(proc, load("fedelasticnet"))
    jobs = planned_jobs(proc.stdout + proc.stderr)
    rules = [r for r, _ in jobs]
    # Figure 2's experiment (CIFAR-10, 10 %: 3 splits x 6 methods) also writes Δ histograms
    assert rules.count("train") == 162 and rules.count("train_delta_histogram") == 18
    assert sorted(w["figure"] for r, w in jobs if r == "paper_figure") == [
        "fedelasticnet_accuracy", "fedelasticnet_cifar10_p10_delta_histogram", "fedelasticnet_lambda1_sweep"]
    assert rules.count("prepare_dataset") == 5
    assert sorted(w["table"] for r, w in jobs if r == "paper_table") == [
        "fedelasticnet_sweep", "fedelasticnet_table2", "fedelasticnet_table3", "fedelasticnet_table4"]


def test_full_grid_without_the_data_fails_with_dataset_not_available(tmp_path):
    mirror = tmp_path / "empty_mirror"
    mirror.mkdir()
    cfg = load("fedelasticnet")
    cfg["data"] = {"mirror": str(mirror)}
    proc = snakemake(tmp_path, cfg, "--until", "prepare_dataset")
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "dataset not available" in out
    assert "train-images-idx3-ubyte.gz" in out  # names the missing files
    assert "mirror: /path/to/mirror" in out  # and the fix
    assert "Traceback" not in out


def test_quick_experiments_run_end_to_end_with_the_paper_tables(tmp_path):
    fen, ea = load("fedelasticnet_quick"), load("elastic_aggregation_quick")
    cfg = copy.deepcopy(fen)
    cfg["device"] = "cpu"
    del cfg["experiments"]["fedelasticnet_quick_lambda1_sweep"]  # planned in the dry-run test below
    cfg["datasets"].update(ea["datasets"])
    for name, exp in (*fen["experiments"].items(), *ea["experiments"].items()):
        if name == "fedelasticnet_quick_lambda1_sweep":
            continue
        exp = copy.deepcopy(exp)
        exp["rounds"] = 2
        ds = next(iter(exp["datasets"]))  # the quick files' one dataset (mnist5k), its IID split, one seed
        exp["datasets"] = {ds: {**exp["datasets"][ds], "partitions": {"iid": exp["datasets"][ds]["partitions"]["iid"]}}}
        exp["seeds"] = exp["seeds"][:1]
        keep = {"fedelasticnet_quick_p10": ("feddyn", "fedelasticnet_feddyn"),
                "elastic_aggregation_quick": ("fedavg", "elastic_fedavg")}[name]
        exp["algorithms"] = {k: v for k, v in exp["algorithms"].items() if k in keep}
        cfg["experiments"][name] = exp
    assert len(expand_cells(cfg)) == 4  # kept < 60 s: every train job is a fresh Python with torch
    ok(snakemake(tmp_path, cfg))
    tables = tmp_path / "results" / "tables" / "paper"
    assert sorted(p.name for p in tables.glob("*.md")) == [
        "elastic_aggregation_table1.md", "fedelasticnet_table2.md", "fedelasticnet_table3.md",
        "fedelasticnet_table4.md"]
    t2 = pl.read_csv(tables / "fedelasticnet_table2.csv")
    # the communication rows (the CSV also holds the test accuracy printed beside each of them)
    ours = t2.filter((pl.col("experiment") == "fedelasticnet_quick_p10") & (pl.col("metric") != "test_accuracy"))
    assert sorted(ours.get_column("algorithm")) == ["feddyn", "fedelasticnet_feddyn"]
    assert ours.get_column("ours").null_count() == 0 and ours.get_column("paper").null_count() == 2
    assert t2.filter(pl.col("experiment").is_null()).get_column("paper").max() == 826.74  # the paper's rows
    md2 = (tables / "fedelasticnet_table2.md").read_text()
    assert "fedelasticnet_quick_p10" in md2 and "— / 163.82" in md2
    assert "fedelasticnet_quick" not in (tables / "fedelasticnet_table4.md").read_text()  # 10 % only: Tables 2, 3
    # FedDyn's entropy as θ (Δ), both measured: Δ (θ_k − θ^{t−1}) is far below θ
    t3 = pl.read_csv(tables / "fedelasticnet_table3.csv").filter(
        (pl.col("experiment") == "fedelasticnet_quick_p10") & (pl.col("algorithm") == "feddyn"))
    ent = dict(zip(t3.get_column("metric"), t3.get_column("ours")))
    assert 0 < ent["uplink_entropy_bits_delta"] < ent["uplink_entropy_bits"]
    line3 = next(x for x in (tables / "fedelasticnet_table3.md").read_text().splitlines()
                 if "fedelasticnet_quick_p10" in x)
    assert "n/m" not in line3
    t1 = (tables / "elastic_aggregation_table1.md").read_text()
    assert "elastic_aggregation_quick" in t1 and "61.22" in t1 and "55.39" in t1 and "train acc" in t1
    # the per-round boosted percentage: null for FedAvg, in (0, 100) for Elastic Aggregation
    m = pl.read_parquet(tmp_path / "results" / "metrics.parquet")
    ea = m.filter(pl.col("experiment") == "elastic_aggregation_quick")
    assert ea.filter(pl.col("algorithm") == "fedavg").get_column("boosted_pct").null_count() == 2
    boosted = ea.filter(pl.col("algorithm") == "elastic_fedavg").get_column("boosted_pct")
    assert boosted.null_count() == 0 and 0 < boosted.min() and boosted.max() < 100
    # the paper figures: Elastic Aggregation's Figure 1, FedElasticNet's Figure 2 (from counts only)
    plots = tmp_path / "results" / "plots" / "paper"
    assert (plots / "elastic_aggregation_boosted.png").stat().st_size > 10_000
    assert (plots / "fedelasticnet_quick_p10_delta_histogram.png").stat().st_size > 10_000
    run = tmp_path / "results" / "runs" / "fedelasticnet_quick_p10" / "mnist5k" / "iid" / "feddyn" / "seed=0"
    hist = pl.read_parquet(run / "delta_histogram.parquet")
    last = m.filter((pl.col("experiment") == "fedelasticnet_quick_p10") & (pl.col("algorithm") == "feddyn")
                    ).sort("round").row(-1, named=True)
    assert hist.filter(pl.col("round") == 0).get_column("count").sum() == last["uplink_floats"]
    assert set(hist.get_column("round")) == {0, 1, 2} and set(hist.get_column("entry")) == {"delta"}
    # Alg. 3 sends its thresholded Δ̂_k: the file's exact zeros are every value it sent that is 0
    alg3 = pl.read_parquet(run.parent.parent / "fedelasticnet_feddyn" / "seed=0" / "delta_histogram.parquet")
    last3 = m.filter((pl.col("experiment") == "fedelasticnet_quick_p10")
                     & (pl.col("algorithm") == "fedelasticnet_feddyn")).sort("round").row(-1, named=True)
    cum3 = alg3.filter(pl.col("round") == 0)
    assert cum3.get_column("zeros").sum() == last3["uplink_floats"] - last3["uplink_nonzeros"] > 0
    assert cum3.filter(pl.col("zeros") > 0).get_column("bin").to_list() == [0]
    assert not (tmp_path / "results" / "runs" / "elastic_aggregation_quick" / "mnist5k" / "iid" / "fedavg" / "seed=0"
                / "delta_histogram.parquet").exists()  # only the experiment that asks for it


def test_dry_run_of_the_quick_files_plans_the_paper_tables_and_the_sweep_plot(tmp_path):
    proc = ok(snakemake(tmp_path, load("fedelasticnet_quick"), "-n"))
    check_estimate(proc, load("fedelasticnet_quick"))
    jobs = planned_jobs(proc.stdout + proc.stderr)
    rules = [r for r, _ in jobs]
    assert sum(r.startswith("train_") for r in rules) == 13  # a stacked job per (split, method) and the sweep's
    assert sum(r.startswith("train_fedelasticnet_quick_p10_") for r in rules) == 12  # 2 splits x 6 methods
    assert rules.count("paper_table") == 4  # Tables 2-4 and the λ1 sweep's
    assert sorted(w["figure"] for r, w in jobs if r == "paper_figure") == [
        "fedelasticnet_accuracy", "fedelasticnet_lambda1_sweep",
        "fedelasticnet_quick_p10_delta_histogram"]  # no elastic_aggregation_boosted
    proc = ok(snakemake(tmp_path, load("elastic_aggregation_quick"), "-n"))
    check_estimate(proc, load("elastic_aggregation_quick"))
    jobs = planned_jobs(proc.stdout + proc.stderr)
    rules = [r for r, _ in jobs]
    assert sum(r.startswith("train_") for r in rules) == 14  # a stacked job per (split, algorithm): its seeds
    assert rules.count("paper_table") == 1
    assert [w["figure"] for r, w in jobs if r == "paper_figure"] == ["elastic_aggregation_boosted"]
    assert "train_delta_histogram" not in rules


def test_fedac_files_expand_to_the_papers_grids():
    quick = expand_cells(load("fedac_quick"))
    assert len(quick) == 6 * 3 * 4 * 7 * 2  # algorithms × M × K × η × seeds
    assert {c["model"]["name"] for c in quick} == {"binary_logreg"}
    assert {(c["local"]["steps"], c["rounds"], c["eval_every"]) for c in quick} == {
        (1, 512, 64), (8, 64, 8), (32, 16, 2), (64, 8, 1)}  # T = K · rounds = 512, evaluation every 64 steps
    assert {c["scale"] for c in quick} == {"reduced real data"}
    assert all(c["local"]["replacement"] and c["local"]["batch_size"] == 1 and c["eval_initial"] for c in quick)
    assert {c["sweep"]["select"]["over"][0] for c in quick} == {"local.lr"}


@pytest.mark.slow
def test_fedac_quick_runs_end_to_end_with_suboptimality_and_the_paper_outputs(tmp_path):
    """The FedAc protocol on embedded data, cut to M = 4, K ∈ {1, 4}, 2 η, 1 seed: F* by rule optimum,
    suboptimality ≥ 0 at every evaluation (F* is the minimum), K = 1 equivalences in the chosen
    scores (FedAvg = Mb-SGD, FedAc-I = Mb-Ac-SGD: the same samples), the paper's tables and figures."""
    cfg = load("fedac_quick")
    cfg["device"] = "cpu"
    exp = cfg["experiments"]["fedac_quick"]
    exp["seeds"] = [0]
    exp["sweep"]["grid"] = {"local.lr": [0.1, 0.3], "partition.num_clients": [4]}
    exp["sweep"]["zip"] = {"local.steps": [1, 4], "rounds": [32, 8], "eval_every": [8, 2]}
    assert len(expand_cells(cfg)) == 24  # 6 algorithms × 2 η × 2 K
    ok(snakemake(tmp_path, cfg))
    res = tmp_path / "results"
    m = pl.read_parquet(res / "metrics.parquet")
    assert m.get_column("suboptimality").null_count() == 0
    assert m.get_column("suboptimality").min() >= -1e-12
    assert sorted(set(m.get_column("round"))) == [0, 2, 4, 6, 8, 16, 24, 32]
    opt = json.loads(next(res.glob("optimum/breast_cancer-*/l2=*.json")).read_text())
    assert opt["grad_norm"] <= 1e-12 and opt["lam"] == 1e-3  # the paper's main λ (§5)
    fstar = (m.get_column("train_objective") - m.get_column("suboptimality")).to_list()
    assert max(fstar) - min(fstar) < 1e-12 and abs(fstar[0] - opt["value"]) < 1e-12
    best = pl.read_csv(res / "tables" / "paper" / "fedac_best.csv")
    k1 = {r["key"]: r["mean"] for r in best.filter(pl.col("K") == 1).iter_rows(named=True)}
    assert k1["fedavg"] == pytest.approx(k1["mb_sgd"], rel=1e-9)
    assert k1["fedac"] == pytest.approx(k1["mb_ac_sgd"], rel=1e-9)
    for name in ("fedac_best", "fedac_rounds", "fedac_optimum"):
        assert (res / "tables" / "paper" / f"{name}.md").stat().st_size > 200
    for name in ("fedac_vs_m", "fedac_vs_k"):
        assert (res / "plots" / "paper" / f"{name}.png").stat().st_size > 10_000
    assert "local.lr" in (res / "tables" / "sweeps" / "fedac_quick.md").read_text()


def test_local_update_files_expand_to_the_papers_grids():
    """Charles & Konečný (AISTATS 2021): the quick file's 58 quadratic cells; the full file's 9×9 (γ, η)
    grids (Figs. 6/11: 3 server momenta + 4 α), the γ sweeps of Figs. 12/13 on FEMNIST, CIFAR-100
    (ResNet-18 with GroupNorm) and Shakespeare."""
    quick = expand_cells(load("local_update_quick"))
    assert len(quick) == 10 + 30 + 5 + 13
    assert {c["paper"] for c in quick} == {"local_update"}
    assert {c["model"]["name"] for c in quick} == {"quadratic"}
    full = expand_cells(load("local_update"))
    by_exp = {}
    for c in full:
        by_exp.setdefault(c["experiment"], []).append(c)
    assert {k: len(v) for k, v in by_exp.items()} == {
        "local_update_femnist_momentum": 3 * 81, "local_update_femnist_alpha": 4 * 81,
        "local_update_gamma_fixed_eta": 3 * 5, "local_update_gamma_tuned_eta": 3 * 5 * 9}
    fig6 = by_exp["local_update_femnist_momentum"]
    assert {c["local"]["steps"] for c in fig6} == {50} and {c["local"]["batch_size"] for c in fig6} == {20}
    assert len({(c["local"]["lr"], c["hparams"]["server_lr"]) for c in fig6}) == 81
    assert {c["sweep"]["select"]["metric"] for c in fig6} == {"test_accuracy"}
    assert {c["hparams"]["momentum"] for c in fig6 if c["hparams"]["server_opt"] != "gd"} == {0.9}
    fig13 = by_exp["local_update_gamma_tuned_eta"]
    assert {tuple(c["sweep"]["select"]["over"]) for c in fig13} == {("server_lr",)}
    assert {c["dataset"]: c["local"]["batch_size"] for c in fig13} == {"fed_emnist": 20, "fed_cifar100": 20,
                                                                          "shakespeare": 4}
    assert {c["hparams"]["server_lr"] for c in by_exp["local_update_gamma_fixed_eta"]} == {0.01}
    assert {c["model"]["name"] for c in full if c["dataset"] == "fed_cifar100"} == {"resnet18_gn"}


def test_dry_run_of_the_local_update_files_plans_the_paper_outputs(tmp_path):
    proc = ok(snakemake(tmp_path, load("local_update"), "-n"))
    check_estimate(proc, load("local_update"))
    jobs = planned_jobs(proc.stdout + proc.stderr)
    rules = [r for r, _ in jobs]
    assert rules.count("prepare_dataset") == 3 and "paper_table" not in rules
    figures = sorted(w["figure"] for r, w in jobs if r == "paper_figure")
    assert "local_update_accuracy" in figures and "local_update_gamma_loss" in figures
    assert "local_update_fig5" in figures and "local_update_heavy_ball_symmetry" in figures and len(figures) == 12
    proc = ok(snakemake(tmp_path, load("local_update_quick"), "-n"))
    check_estimate(proc, load("local_update_quick"))
    jobs = planned_jobs(proc.stdout + proc.stderr)
    assert [w["table"] for r, w in jobs if r == "paper_table"] == ["local_update_theory"]
    assert sum(r == "paper_figure" for r, _ in jobs) == 10


@pytest.mark.slow
def test_local_update_quick_runs_end_to_end_with_the_theory_table(tmp_path):
    """The quick file cut to three members (60 rounds): the table's fixed points and loss trajectories
    match the theory to float precision, the frontier figures are written; two 2×2 (γ, η) sweeps on
    digits write the Figs. 6/11 and 12/13 curve figures through the sweep selection."""
    cfg = load("local_update_quick")
    cfg["device"] = "cpu"
    exp = cfg["experiments"]["local_update_quick_members"]
    exp["rounds"] = 60
    exp["algorithms"] = {k: v for k, v in exp["algorithms"].items() if k in ("lu_all_gd", "fedavg", "maml")}
    nn = {"paper": "local_update", "seeds": [0], "rounds": 4, "eval_every": 2,
          "sampling": {"scheme": "uniform", "participation": 0.5}, "local": {"steps": 2, "batch_size": 16, "lr": 0.1},
          "stack": True, "datasets": {"digits": {"model": {"name": "mlp", "hidden": [16]},
                                                 "partitions": {"iid": {"scheme": "iid", "num_clients": 4}}}},
          "algorithms": {"gd": {"algorithm": "local_update", "server_opt": "gd"}}}
    grid = {"local.lr": [0.03, 0.3], "server_lr": [0.1, 1.0]}
    cfg["datasets"]["digits"] = {"source": "digits"}
    cfg["experiments"] = {
        "local_update_quick_members": exp,  # Figs. 6/11 selects (γ, η) jointly, Fig. 13 η per γ
        "nn_acc": {**nn, "sweep": {"grid": grid, "select": {"metric": "test_accuracy", "statistic": "mean_last",
                                                            "last": 2, "over": ["local.lr", "server_lr"]}}},
        "nn_loss": {**nn, "sweep": {"grid": grid, "select": {"metric": "train_loss", "statistic": "mean_last",
                                                             "last": 2, "direction": "min", "over": ["server_lr"]}}}}
    ok(snakemake(tmp_path, cfg))
    res = tmp_path / "results"
    t = pl.read_csv(res / "tables" / "paper" / "local_update_theory.csv")
    assert t.height == 3 and t.get_column("dist_rel_error").max() < 1e-9
    assert t.get_column("rate_rel_error").max() < 0.05
    assert t.get_column("trajectory_error").max() < 1e-9  # every round is the surrogate recursion
    plots = res / "plots" / "paper"
    assert (plots / "local_update_fig1.png").stat().st_size > 10_000
    assert (plots / "local_update_heavy_ball_symmetry.png").stat().st_size > 10_000
    assert (plots / "local_update_accuracy.png").stat().st_size > 10_000  # the neural-network figures
    assert (plots / "local_update_gamma_loss.png").stat().st_size > 10_000


def test_fed_minimax_file_expands_to_the_papers_design():
    """Sharma, Panda & Joshi (TMLR 2023), Figs. 3–10: CIFAR-10 VGG-11, n = 15, Dirichlet, batch 32,
    τ_i ~ U{2..E} epochs, Tables 3–4 learning rates (robust: / 10 after rounds 100 and 200)."""
    cells = expand_cells(load("fed_minimax"))
    count = {}
    for c in cells:
        count[c["experiment"]] = count.get(c["experiment"], 0) + 1
    assert count == {"fed_minimax_robust": 18, "fed_minimax_fair": 18, "fed_minimax_robust_participation": 18,
                     "fed_minimax_robust_alpha": 12, "fed_minimax_robust_clients": 12,
                     "fed_minimax_fair_participation": 9}
    assert {c["seed"] for c in cells} == {1, 2, 3} and {c["paper"] for c in cells} == {"fed_minimax"}
    assert {c["dataset"] for c in cells} == {"cifar10"} and {c["model"]["name"] for c in cells} == {"vgg11"}
    assert {c["local"]["batch_size"] for c in cells} == {32} and {c["local"]["lr"] for c in cells} == {0.016}
    assert {c["hparams"]["y_lr_scale"] for c in cells} == {1.25}  # η_y = 0.02
    problem = {c["experiment"]: c["model"]["minimax"]["problem"] for c in cells}
    for c in cells:
        robust = problem[c["experiment"]] == "robust"
        assert c["local"].get("lr_schedule") == ({"milestones": [100, 200], "factor": 0.1} if robust else None)
        assert c["hparams"]["projection"] == ("ball" if robust else "simplex")
        assert c["hparams"]["momentum"] == (0.9 if c["algorithm"].split(",")[0].endswith("_m") else 0.0)
    by = {e: [c for c in cells if c["experiment"] == e] for e in count}
    assert {(c["local"]["epochs"]["high"]) for c in by["fed_minimax_robust"]} == {5, 7}
    assert {c["algorithm_name"] for c in by["fed_minimax_robust"]} == {"local_sgda_plus", "fed_norm_sgda_plus"}
    assert {c["algorithm_name"] for c in by["fed_minimax_fair"]} == {"local_sgda", "fed_norm_sgda"}
    p = by["fed_minimax_robust_participation"]
    assert {round(c["sampling"]["participation"] * 15) for c in p} == {5, 10, 15}
    assert {c["partition"] for c in p} == {"dir0.1", "dir1.0"}
    assert len({c["partition"] for c in by["fed_minimax_robust_alpha"]}) == 4
    assert {c["partition"] for c in by["fed_minimax_robust_clients"]} == {
        f"dir0.1,num_clients={n}" for n in (5, 10, 15, 20)}
    assert {c["target_accuracy"] for c in cells} == {0.7}


def test_dry_run_of_the_fed_minimax_file_plans_every_cell_and_the_paper_outputs(tmp_path):
    proc = ok(snakemake(tmp_path, load("fed_minimax"), "-n"))
    check_estimate(proc, load("fed_minimax"))
    jobs = planned_jobs(proc.stdout + proc.stderr)
    rules = [r for r, _ in jobs]
    assert rules.count("train") == 87 and rules.count("prepare_dataset") == 1
    assert sorted(w["figure"] for r, w in jobs if r == "paper_figure") == [
        "fed_minimax_clients", "fed_minimax_curves", "fed_minimax_toy"]  # Fig. 9: the n sweep
    assert [w["table"] for r, w in jobs if r == "paper_table"] == ["fed_minimax_summary"]


@pytest.mark.slow
def test_fed_minimax_quick_cut_runs_end_to_end_with_the_summary_and_fig9(tmp_path):
    """The quick robust experiment cut to 2 rounds, 1 seed, Fed-Norm-SGDA+ over n ∈ {5, 10}: the
    PGD column for the robust cells, the summary table and Fig. 9's layout written by the workflow."""
    cfg = load("fed_minimax_quick")
    cfg["device"] = "cpu"
    exp = cfg["experiments"]["fed_minimax_robust_quick"]
    cfg["experiments"] = {"fed_minimax_robust_quick": exp}  # the other experiments (fair, the P sweeps) out
    exp |= {"seeds": [0], "rounds": 2, "local": exp["local"] | {"epochs": 1}}
    exp["sweep"] = {"grid": {"partition.num_clients": [5, 10]}}
    exp["algorithms"] = {"fed_norm_sgda_plus": exp["algorithms"]["fed_norm_sgda_plus"]}
    assert len(expand_cells(cfg)) == 2
    ok(snakemake(tmp_path, cfg))
    m = pl.read_parquet(tmp_path / "results" / "metrics.parquet")
    pgd = m.get_column("test_pgd_accuracy")
    assert pgd.null_count() == 0 and 0.0 <= pgd.min() and pgd.max() <= 1.0
    summary = pl.read_csv(tmp_path / "results" / "tables" / "paper" / "fed_minimax_summary.csv")
    assert summary.height == 2 and summary.get_column("pgd_final_mean").null_count() == 0
    assert "rounds to 70 %" in (tmp_path / "results" / "tables" / "paper" / "fed_minimax_summary.md").read_text()
    assert (tmp_path / "results" / "plots" / "paper" / "fed_minimax_clients.png").stat().st_size > 10_000
