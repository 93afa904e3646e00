"""fedbench.papers.fedac: best suboptimality per (algorithm, M, K), rounds to target, F*, the
figures; the reference numbers reproduce the paper's §5 claims."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from PIL import Image

from fedbench.papers import fedac
from fedbench.papers.base import REFERENCE_DIR

SELECT = {"metric": "suboptimality", "statistic": "best", "last": 10, "direction": "min", "average_seeds": True,
          "over": ["local.lr"]}


def cells_and_metrics(mr, grid_lr, ms, ks, best, seeds=(0, 1), dataset="a9a", lam=1e-3, algorithm="fedac",
                      fstar=0.3):
    """Swept cells as fedbench.config makes them (η × M × (K, rounds) with select over local.lr) and
    their metrics rows: ``best(M, K, η, seed)`` is the run's lowest suboptimality (the round-0 row
    at 1.0, the last at ``best``); clients_sampled = M."""
    cells, rows = [], []
    for m in ms:
        for k in ks:
            for lr in grid_lr:
                for seed in seeds:
                    point = {"local.lr": lr, "partition.num_clients": m, "local.steps": k, "rounds": 64 // k}
                    c = {"experiment": "e", "dataset": dataset, "partition": f"shared,num_clients={m}",
                         "algorithm": f"{algorithm},lr={lr},steps={k},rounds={64 // k}", "seed": seed,
                         "algorithm_name": "fedac" if algorithm.startswith("fedac") else algorithm,
                         "hparams": {"variant": "I"} if algorithm.startswith("fedac") else {},
                         "steps": k, "lam": lam, "lr": lr, "rounds": 64 // k,
                         "sweep": {"label": algorithm, "partition": "shared", "point": point,
                                   "grid": {"local.lr": list(grid_lr), "partition.num_clients": list(ms),
                                            "local.steps": list(ks), "rounds": [64 // k for k in ks]},
                                   "select": SELECT}}
                    cells.append(c)
                    b = best(m, k, lr, seed)
                    for t, sub in ((0, 1.0), (64 // k, b)):
                        rows.append({**{key: c[key] for key in fedac._KEYS}, "algorithm_name": c["algorithm_name"],
                                     "hparams_id": "0" * 12, "round": t, "clients_sampled": 0 if t == 0 else m,
                                     "train_loss": fstar + sub, "train_objective": fstar + sub,
                                     "test_loss": math.nan, "test_accuracy": math.nan, "uplink_floats": 0,
                                     "uplink_nonzeros": 0, "uplink_entropy_bits": 0.0, "downlink_floats": 0,
                                     "wall_seconds": 0.0, "status": "ok"})
    metrics = mr.frame(rows).with_columns((pl.col("train_objective") - fstar).alias("suboptimality"))
    return cells, metrics


def test_best_frame_chooses_eta_per_m_and_k_with_m_from_the_metrics(mr):
    # best at lr 0.1 except (M=16, K=4) where lr 1.0 (the grid's edge) wins; seed 1 is noisier
    def best(m, k, lr, seed):
        good = 1.0 if (m, k) == (16, 4) else 0.1
        return (1e-3 if lr == good else 1e-2) * (1 + seed) / m

    cells, metrics = cells_and_metrics(mr, [0.01, 0.1, 1.0], [4, 16], [1, 4], best)
    out = fedac.best_frame(metrics, cells)
    assert out.height == 4 and set(out["key"]) == {"fedac"}
    got = {(r["M"], r["K"]): (r["eta"], r["edge"], r["T"]) for r in out.iter_rows(named=True)}
    assert got == {(4, 1): (0.1, "", 64), (4, 4): (0.1, "", 64), (16, 1): (0.1, "", 64),
                   (16, 4): (1.0, "local.lr: upper edge (1.0)", 64)}
    r = out.filter((pl.col("M") == 16) & (pl.col("K") == 4)).row(0, named=True)
    assert r["mean"] == pytest.approx(1.5e-3 / 16, rel=1e-12) and r["n_seeds"] == 2
    assert r["sd"] == pytest.approx(math.sqrt(0.5) * 1e-3 / 16, rel=1e-12)
    md = fedac.markdown_best(fedac._with_reference(out, fedac.reference_frame()))
    assert "1 ⚠" in md and "FedAc-I" in md


def test_the_authors_numbers_give_the_papers_rounds_to_target():
    """§5: a9a λ = 1e-3, M = 8,192, target 1e-3: 32 / 128 / 1,024 / 4,096 rounds (FedAc / Mb-Ac-SGD /
    Mb-SGD / FedAvg); epsilon λ = 1e-4, M = 2,048, target 1e-4: 64 / 256 / 4,096 / 4,096. The
    reference file (the authors' runs) and our rounds rule reproduce both, but for one count: the
    paper's 32 rounds for FedAc on a9a rests on its 1.04e-3 at K = 128 ("≈ 1e-3"); the rule (≤ the
    target) gives 64 (K = 64: 3.1e-4)."""
    ref = fedac.reference_frame()
    as_ours = ref.filter(pl.col("K") <= 256).select(
        pl.lit("e").alias("experiment"), "dataset", pl.col("lambda").alias("lam"), pl.col("algorithm"),
        pl.col("algorithm").alias("key"), "M", "K", pl.lit(4096).alias("T"), "eta",
        pl.col("best_suboptimality").alias("mean"))
    out = fedac.rounds_to_target(as_ours, ref)
    for (ds, lam), (m, target, claim) in fedac.PAPER_CLAIMS.items():
        at = out.filter((pl.col("dataset") == ds) & (pl.col("lam") == lam))
        assert set(at["M"]) == {m} and set(at["target"]) == {target}
        got = dict(zip(at["key"], at["rounds"]))
        assert {k: got[k] for k in claim} == ({**claim, "fedac": 64} if ds == "a9a" else claim)
        assert dict(zip(at["key"], at["paper_claim"])) == {k: claim.get(k) for k in got}
        assert dict(zip(at["key"], at["paper_rounds"])) == got  # the same rule on the same numbers


def test_reference_file_is_the_papers_fstar_and_grid():
    ref = fedac.reference_frame(REFERENCE_DIR / "fedac_best_suboptimality.csv")
    fstar = dict(((d, lam), f) for d, lam, f in ref.select("dataset", "lambda", "fstar").unique().rows())
    assert fstar == {("a9a", 1e-3): 0.3333407530091771, ("a9a", 1e-2): 0.3727237615595949,
                     ("a9a", 1e-4): 0.3245069255709821, ("epsilon", 1e-4): 0.47130400753628965}
    row = ref.filter((pl.col("dataset") == "a9a") & (pl.col("lambda") == 1e-3) & (pl.col("algorithm") == "fedac")
                     & (pl.col("M") == 8192) & (pl.col("K") == 128)).row(0, named=True)
    assert row["best_suboptimality"] == pytest.approx(1.04e-3, rel=0.01)  # the paper's "≈ 1e-3" at 32 rounds


def test_rounds_to_target_elsewhere_uses_the_largest_m_and_decade_targets(mr):
    cells, metrics = cells_and_metrics(mr, [0.1], [4, 16], [1, 4, 16],
                                       lambda m, k, lr, s: 10.0 ** (-4 + math.log2(k) / 2) / m,
                                       seeds=(0,), dataset="toy", lam=0.01)
    best = fedac.best_frame(metrics, cells)
    out = fedac.rounds_to_target(best, fedac.reference_frame())
    assert set(out["M"]) == {16}
    # scores at M = 16: 6.25e-6 (K=1), 6.25e-5 (K=4), 6.25e-4 (K=16): decade targets 1e-5 and 1e-4
    assert out["target"].to_list() == [1e-5, 1e-4]
    assert out["rounds"].to_list() == [64, 16]  # 1e-5 needs K = 1 (64 rounds); 1e-4 is met at K = 4
    assert out["paper_rounds"].null_count() == 2


def test_optimum_frame_recovers_fstar_and_plot_writes(mr, tmp_path):
    cells, metrics = cells_and_metrics(mr, [0.1, 1.0], [4, 8], [1, 2], lambda m, k, lr, s: 1e-3 * lr,
                                       fstar=0.3333407530091771)
    opt = fedac.optimum_frame(metrics, cells, fedac.reference_frame())
    assert opt.rows() == [("a9a", 1e-3, pytest.approx(0.3333407530091771, abs=1e-15), 0.3333407530091771,
                           pytest.approx(0.0, abs=1e-15))]
    assert "0.333340753009177" in fedac.markdown_optimum(opt)
    best = fedac.best_frame(metrics, cells)
    for x in ("M", "K"):
        out = fedac.plot_best(best, fedac.reference_frame(), tmp_path / f"{x}.png", x=x)
        assert Image.open(out).size[0] > 300
    with pytest.raises(ValueError, match="'M' or 'K'"):
        fedac.plot_best(best, fedac.reference_frame(), tmp_path / "x.png", x="T")


def test_algorithm_keys():
    assert fedac.algorithm_key({"algorithm_name": "fedac", "hparams": {"variant": "I"}}) == "fedac"
    assert fedac.algorithm_key({"algorithm_name": "fedac", "hparams": {"variant": "vanilla"}}) == "fedac_vanilla"
    assert fedac.algorithm_key({"algorithm_name": "fedac", "hparams": {"variant": "II", "beta_formula": "code"}}) \
        == "fedac_ii_code"
    assert fedac.algorithm_key({"algorithm_name": "fedac", "hparams": {"variant": "II"}}) == "fedac_ii"
    assert fedac.algorithm_key({"algorithm_name": "mb_sgd", "hparams": {}}) == "mb_sgd"


# ------------------------------------------------------------------------------ on the real a9a


@pytest.mark.parametrize("k_steps", [16, 256])
def test_a9a_mb_sgd_from_the_authors_w0_reproduces_their_published_run(k_steps, real_a9a_dir):
    """Mb-SGD on the real a9a, λ = 1e-3, M = 8,192, η = 2, T = 4,096, seed 1 and the authors' w₀ for
    it (``init: numpy_legacy``): a minibatch of M·K ≥ 131,072 samples a step makes the run nearly
    full-gradient descent, so its best suboptimality is the authors' published number (their
    summary.csv, ``best_loss − F*``; 0.1% apart from plain gradient descent from the same w₀) up to
    sampling noise of a few 0.1%."""
    from fedbench.data.libsvm import read_svmlight
    from fedbench.data.partition import make_partition
    from fedbench.data.store import Dataset
    from fedbench.engine.rounds.loop import train
    from fedbench.metrics.optimum import solve_optimum

    ref = fedac.reference_frame().filter((pl.col("dataset") == "a9a") & (pl.col("lambda") == 1e-3)
                                         & (pl.col("algorithm") == "mb_sgd") & (pl.col("M") == 8192)
                                         & (pl.col("K") == k_steps))
    assert ref["eta"].to_list() == [2.0]  # their best run of this cell is the one rerun here
    published = ref["best_suboptimality"][0]  # 0.009039 (K = 16), 0.161319 (K = 256)
    x, y = read_svmlight(real_a9a_dir / "a9a", 123)
    assert x.shape == (32561, 123)
    ds = Dataset("a9a", x, (y > 0).astype(np.int64), x[:0], (y[:0] > 0).astype(np.int64), num_classes=2)
    part = make_partition(ds, {"scheme": "shared", "num_clients": 8192}, seed=1)
    rounds = 4096 // k_steps
    spec = {"experiment": "t", "dataset": "a9a", "partition": "shared", "algorithm": "mb_sgd", "seed": 1,
            "algorithm_name": "mb_sgd", "hparams": {}, "model": {"name": "binary_logreg", "init": "numpy_legacy"},
            "local": {"epochs": None, "steps": k_steps, "batch_size": 1, "replacement": True, "lr": 2.0,
                      "lr_decay": 1.0, "weight_decay": 1e-3, "clip_norm": None},
            "sampling": {"scheme": "uniform", "participation": 1.0}, "rounds": rounds,
            "eval_every": 512 // k_steps, "eval_initial": True, "target_accuracy": None, "dtype": "float64"}
    rows, _ = train(spec, ds, part, device="cpu", engine="vectorized")
    assert [r["round"] for r in rows] == list(range(0, rounds + 1, 512 // k_steps))
    fstar = solve_optimum(x.astype(np.float64), y, 1e-3).value
    best = min(r["train_objective"] for r in rows) - fstar
    assert best == pytest.approx(published, rel=1e-2)
