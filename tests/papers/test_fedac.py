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


def test_a9a_mb_sgd_from_the_authors_w0_reproduces_their_published_run(real_a9a_dir):
    """Mb-SGD on the real a9a, λ = 1e-3, M = 8,192, η = 2, T = 4,096, seed 1 and the authors' w₀ for
    it (``init: numpy_legacy``): a minibatch of M·K ≥ 131,072 samples a step makes the run nearly
    full-gradient descent, so its best suboptimality is the authors' published number (their
    summary.csv, ``best_loss − F*``; 0.1% apart from plain gradient descent from the same w₀) up to
    sampling noise of a few 0.1%. One K (256, 16 rounds): the behaviour is the same at every K, and a
    run costs M·T = 33.5M sample gradients."""
    from fedbench.data.libsvm import read_svmlight
    from fedbench.data.partition import make_partition
    from fedbench.data.store import Dataset
    from fedbench.engine.rounds.loop import train
    from fedbench.metrics.optimum import solve_optimum

    ref = fedac.reference_frame().filter((pl.col("dataset") == "a9a") & (pl.col("lambda") == 1e-3)
                                         & (pl.col("algorithm") == "mb_sgd") & (pl.col("M") == 8192)
                                         & (pl.col("K") == 256))
    assert ref["eta"].to_list() == [2.0]  # their best run of this cell is the one rerun here
    published = ref["best_suboptimality"][0]  # 0.161319
    x, y = read_svmlight(real_a9a_dir / "a9a", 123)
    assert x.shape == (32561, 123)
    ds = Dataset("a9a", x, (y > 0).astype(np.int64), x[:0], (y[:0] > 0).astype(np.int64), num_classes=2)
    part = make_partition(ds, {"scheme": "shared", "num_clients": 8192}, seed=1)
    k_steps = 256
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


# ------------------------------------------------------------------------------ the claims (scorecard)

from fedbench.analysis import scorecard as sc  # noqa: E402

_COLUMNS = {"experiment": "e", "T": 4096, "eta": 0.1, "sd": None, "n_seeds": 1, "edge": "", "points": 3,
            "diverged": 0, "status": "ok", "paper_eta": 0.1, "paper_eta_edge": False}


def _best(rows):
    """A fedac_best table from (dataset, lam, key, M, K, mean, paper) rows."""
    return pl.DataFrame([{**_COLUMNS, "dataset": d, "lam": lam, "algorithm": k, "key": k, "M": m, "K": kk,
                          "mean": mean, "paper": paper, "ratio": None if paper is None else mean / paper}
                         for d, lam, k, m, kk, mean, paper in rows])


def _grid(fn, keys, ms, ks, ds="breast_cancer", lam=1e-3):
    """fedac_best rows with mean = fn(key, M, K) over the grid."""
    return [(ds, lam, a, m, k, fn(a, m, k), None) for a in keys for m in ms for k in ks]


def _decide(cid, rows=None, tables=None):
    (c,) = [c for c in fedac.claims() if c.id == f"fedac.{cid}"]
    return c.decide(sc.Evidence(tables=tables if tables is not None else {"fedac_best": _best(rows)}))


FOUR = ("fedac", "fedavg", "mb_sgd", "mb_ac_sgd")
#: the shape of the paper's Fig. 1/3: all ∝ 1/M at K = 1; FedAvg and Mb-SGD flat in M from K = 8 and
#: growing with K; Mb-Ac-SGD fine up to K = 32, a knee at 64; FedAc-I degrading slowly.
GROWTH = {"fedac": lambda k: 1.2 ** math.log2(k), "fedavg": lambda k: 2.0 ** min(math.log2(k), 3) * 2,
          "mb_sgd": lambda k: k * 1.5, "mb_ac_sgd": lambda k: 1.1 ** math.log2(k) * (40 if k >= 64 else 1)}


def paperlike(a, m, k):
    flat = a in ("fedavg", "mb_sgd") and k >= 8
    return 1e-2 * (16 / 16 if flat else 16 / m) * GROWTH[a](k) * (0.3 if flat else 1)


MS, KS = (16, 64, 256), (1, 2, 8, 32, 64)


def test_fig1_and_fig3_rules_hold_on_the_papers_shape():
    rows = _grid(paperlike, FOUR, MS, KS)
    for cid in ("linear_speedup_K1", "lose_speedup_K8", "mb_ac_sgd_better", "mb_ac_sgd_knee", "best_at_large_K_M",
                "deteriorate_past_K2", "most_robust_in_K", "rate_power_of_R"):
        v = _decide(cid, rows)
        assert v.status == sc.HOLDS, (cid, v)


def test_linear_speedup_fails_on_a_flat_curve_with_the_slope():
    v = _decide("linear_speedup_K1", _grid(lambda a, m, k: 1e-3 * (2 if a == "fedavg" else 16 / m), FOUR, MS, [1]))
    assert v.status == sc.FAILS and "FedAvg 0.00" in v.margin and "1 of 4" in v.margin


def test_lose_speedup_K8_fails_where_fedavg_keeps_its_speedup():
    v = _decide("lose_speedup_K8", _grid(lambda a, m, k: 1e-3 * 16 / m, FOUR, MS, [8]))
    assert v.status == sc.FAILS and "2 of 2" in v.margin
    assert _decide("lose_speedup_K8", _grid(paperlike, FOUR, MS, [1])).status == sc.UNDECIDED


def test_best_at_large_K_M_needs_the_seed_factor_not_just_a_lower_value():
    """'By a margin' (Fig. 1): a baseline 1.4× above FedAc-I is within one-seed noise (1.53×): fails."""
    rows = _grid(lambda a, m, k: 1e-3 * (1.4 if a == "mb_ac_sgd" else 1 if a == "fedac" else 5), FOUR, [256], [64])
    v = _decide("best_at_large_K_M", rows)
    assert v.status == sc.FAILS and "1 of 1 points within 1.53×" in v.margin and "1.4×" in v.margin
    rows = _grid(lambda a, m, k: 1e-3 * (1.6 if a == "mb_ac_sgd" else 1 if a == "fedac" else 5), FOUR, [256], [64])
    v = _decide("best_at_large_K_M", rows)
    assert v.status == sc.HOLDS and "smallest 1.6×" in v.ours


def test_best_at_large_K_M_uses_K_64_at_every_lambda():
    """Fig. 1's K ≥ 64 holds at a9a λ = 1e-2 too (Fig. 4: 'qualitatively similar to Fig. 1'); App.
    A.2's K ≥ 128 is its own claim."""
    rows = _grid(lambda a, m, k: 1e-3 * (0.9 if a == "mb_ac_sgd" and k == 64 else 1 if a == "fedac" else 5), FOUR,
                 [256], [64, 128], ds="a9a", lam=1e-2)
    assert _decide("best_at_large_K_M", rows).status == sc.FAILS
    assert _decide("lam1e2_margin_K128", rows).status == sc.HOLDS


@pytest.mark.parametrize("ms, ks, keys, missing", [
    ([64], [64], FOUR, "M ≥ 256"), ([256], [32], FOUR, "K ≥ 64"), ([256], [64], FOUR[:3], "Mb-Ac-SGD")])
def test_best_at_large_K_M_not_decidable_says_what_is_missing(ms, ks, keys, missing):
    v = _decide("best_at_large_K_M", _grid(paperlike, keys, ms, ks))
    assert v.status == sc.UNDECIDED and missing in v.note and v.margin == ""


def test_mb_ac_sgd_knee_fails_on_smooth_growth():
    rows = _grid(lambda a, m, k: 1e-3 * 2 ** math.log2(k), ["mb_ac_sgd"], [256], [8, 16, 32, 64])
    v = _decide("mb_ac_sgd_knee", rows)
    assert v.status == sc.FAILS and "0 of 1" in v.margin


def test_mb_ac_sgd_knee_is_at_128_on_a9a_lambda_1e2():
    jump = _grid(lambda a, m, k: 1e-3 * (50 if k >= 128 else 1), ["mb_ac_sgd"], [256], [16, 32, 64, 128],
                 ds="a9a", lam=1e-2)
    assert _decide("mb_ac_sgd_knee", jump).status == sc.HOLDS
    at64 = [r for r in jump if r[4] <= 64]
    assert _decide("mb_ac_sgd_knee", at64).status == sc.UNDECIDED


def test_mb_ac_sgd_better_fails_where_fedavg_is_lower():
    rows = _grid(lambda a, m, k: 1e-3 * (0.5 if a == "fedavg" else 1), FOUR, [256], [8, 32])
    assert _decide("mb_ac_sgd_better", rows).status == sc.FAILS


def test_deteriorate_past_K2_fails_where_K4_is_better():
    rows = _grid(lambda a, m, k: 1e-3 * (0.5 if k == 4 else 1), ["fedavg", "mb_sgd"], [256], [1, 2, 4, 8])
    v = _decide("deteriorate_past_K2", rows)
    assert v.status == sc.FAILS and "0 of 2" in v.ours
    assert _decide("deteriorate_past_K2", [r for r in rows if r[4] >= 4]).status == sc.UNDECIDED


def test_most_robust_in_K_fails_when_a_baseline_degrades_less():
    rows = _grid(lambda a, m, k: 1e-3 * (1 if a == "fedavg" else k), FOUR, [256], [1, 64])
    assert _decide("most_robust_in_K", rows).status == sc.FAILS


def test_rate_power_fails_when_fedavg_grows_faster_than_fedac():
    rows = _grid(lambda a, m, k: 1e-3 * (k ** 0.5 if a == "fedavg" else k ** 0.2), ["fedac", "fedavg"], [256],
                 [8, 32, 64])
    v = _decide("rate_power_of_R", rows)
    assert v.status == sc.FAILS and "FedAc-I 0.20, FedAvg 0.50" in v.ours


def test_vanilla_is_not_decided_by_the_K1_identity():
    """K = 1 (vanilla ≡ FedAc-I) is left out: a ratio of 1 there and 1.2 at K = 128 is not 'worse'."""
    two = ("fedac", "fedac_vanilla")
    mild = _grid(lambda a, m, k: 1e-3 * (1.2 if a == "fedac_vanilla" and k > 1 else 1), two, MS, [1, 2, 128])
    v = _decide("vanilla_degrades_with_K", mild)
    assert v.status == sc.FAILS and "K = 1:" not in v.ours
    worse = _grid(lambda a, m, k: 1e-3 * (1 + k / 40 if a == "fedac_vanilla" else 1), two, MS, [1, 2, 128])
    assert _decide("vanilla_degrades_with_K", worse).status == sc.HOLDS
    assert _decide("vanilla_degrades_with_K", [r for r in worse if r[4] <= 2]).status == sc.UNDECIDED


def test_vanilla_on_a9a_reads_only_figure_2s_lambda():
    worse = _grid(lambda a, m, k: 1e-3 * (1 + k / 40 if a == "fedac_vanilla" else 1), ("fedac", "fedac_vanilla"),
                  MS, [2, 128], ds="a9a", lam=1e-3)
    assert _decide("vanilla_degrades_with_K", worse).status == sc.UNDECIDED


def test_fedac_ii_similar_holds_within_the_seed_factor_and_fails_beyond():
    ok = _grid(lambda a, m, k: 1e-3 * (1.3 if a == "fedac_ii" else 1), ("fedac", "fedac_ii"), MS, KS)
    assert _decide("fedac_ii_similar", ok).status == sc.HOLDS
    far = _grid(lambda a, m, k: 1e-3 * (2 if a == "fedac_ii" else 1), ("fedac", "fedac_ii"), MS, KS)
    assert _decide("fedac_ii_similar", far).status == sc.FAILS


def test_eta_inside_range_at_an_end_fails_and_off_the_papers_data_is_not_decidable():
    rows = _grid(paperlike, FOUR, [256], [64], ds="a9a")
    table = _best(rows)
    assert _decide("eta_inside_range", tables={"fedac_best": table}).status == sc.HOLDS
    edge = table.with_columns(pl.when(pl.col("key") == "fedac").then(1e-3).otherwise(pl.col("eta")).alias("eta"))
    v = _decide("eta_inside_range", tables={"fedac_best": edge})
    assert v.status == sc.FAILS and "FedAc-I 1" in v.margin
    v = _decide("eta_inside_range", _grid(paperlike, FOUR, [256], [64]))
    assert v.status == sc.UNDECIDED and "breast_cancer" in v.note


def test_lambda_1e2_claims_are_about_a9a_only():
    for cid in ("lam1e2_similar_K64", "lam1e2_margin_K128"):
        v = _decide(cid, _grid(paperlike, FOUR, MS, (1, 64, 128), lam=1e-2))
        assert v.status == sc.UNDECIDED and "a9a, epsilon" in v.note


def test_lam1e2_similar_fails_when_fedac_and_mb_ac_sgd_differ():
    close = _grid(lambda a, m, k: 1e-3 * (1.2 if a == "mb_ac_sgd" else 1 if a == "fedac" else 4), FOUR, MS, [8, 64],
                  ds="a9a", lam=1e-2)
    assert _decide("lam1e2_similar_K64", close).status == sc.HOLDS
    apart = _grid(lambda a, m, k: 1e-3 * (2 if a == "mb_ac_sgd" else 1 if a == "fedac" else 4), FOUR, MS, [8, 64],
                  ds="a9a", lam=1e-2)
    v = _decide("lam1e2_similar_K64", apart)
    assert v.status == sc.FAILS and "6 of 6 points more than 1.53× apart" in v.margin


def _rounds(ds, lam, m, target, counts):
    return pl.DataFrame([{"dataset": ds, "lam": lam, "M": m, "target": target, "algorithm": k, "key": k,
                          "rounds": r, "K_run": "1, 2", "paper_rounds": None, "paper_claim": None}
                         for k, r in counts.items()])


def test_rounds_rules_on_hand_built_rounds():
    ok = _rounds("a9a", 1e-3, 8192, 1e-3, {"fedac": 64, "mb_ac_sgd": 128, "mb_sgd": 1024, "fedavg": 4096})
    v = _decide("rounds_to_1e-3", tables={"fedac_rounds": ok})
    assert v.status == sc.HOLDS and v.ours == "64 / 128 / 1,024 / 4,096"
    far = _rounds("a9a", 1e-3, 8192, 1e-3, {"fedac": 64, "mb_ac_sgd": 512, "mb_sgd": 1024, "fedavg": 4096})
    v = _decide("rounds_to_1e-3", tables={"fedac_rounds": far})
    assert v.status == sc.FAILS and "Mb-Ac-SGD 4× the paper's" in v.margin
    assert _decide("rounds_to_1e-4_epsilon", tables={"fedac_rounds": ok}).status == sc.UNDECIDED
    assert _decide("fewest_rounds", tables={"fedac_rounds": ok}).status == sc.HOLDS
    slow = _rounds("breast_cancer", 1e-3, 256, 1e-4, {"fedac": 64, "mb_ac_sgd": 16, "mb_sgd": None, "fedavg": 512})
    v = _decide("fewest_rounds", tables={"fedac_rounds": slow})
    assert v.status == sc.FAILS and "not at breast_cancer λ = 0.001" in v.margin


def test_within_2x_holds_and_fails_with_the_farthest_cell():
    ok = _best([("a9a", 1e-3, "fedac", 256, 64, 1.2e-3, 1e-3), ("a9a", 1e-3, "fedavg", 256, 64, 6e-3, 7e-3)])
    assert _decide("within_2x_of_authors", tables={"fedac_best": ok}).status == sc.HOLDS
    bad = _best([("a9a", 1e-3, "fedac", 256, 64, 2.5e-3, 1e-3), ("a9a", 1e-3, "fedavg", 256, 64, 6e-3, 7e-3)])
    v = _decide("within_2x_of_authors", tables={"fedac_best": bad})
    assert v.status == sc.FAILS and v.cells == ("e/a9a/shared/fedac (M = 256, K = 64)",)
    none = _best([("breast_cancer", 1e-2, "fedac", 4, 1, 1e-3, None)])
    v = _decide("within_2x_of_authors", tables={"fedac_best": none})
    assert v.status == sc.UNDECIDED and "this run: breast_cancer" in v.note


def test_claims_without_a_sweep_are_not_decidable():
    for c in fedac.claims():
        if c.decide is not None:
            v = c.decide(sc.Evidence())
            assert v.status == sc.UNDECIDED and "no FedAc sweep ran" in v.note, c.id


def test_every_claim_says_where_and_what_and_every_rule_its_basis():
    cs = fedac.claims()
    assert len({c.id for c in cs}) == len(cs) >= 20
    for c in cs:
        assert c.id.startswith("fedac.") and c.where and c.says and c.paper_value
        assert (c.decide is not None and c.basis) or (c.decide is None and c.no_run), c.id


def test_the_same_rules_on_the_released_runs_hold_unless_declared_contradicted():
    rows = sc.paper_number_rows(fedac.claims())
    by_id = {c.id: c for c in fedac.claims()}
    for r in rows:
        c = by_id[r["claim"]]
        if c.on_paper is None:
            assert r["verdict"] == sc.UNDECIDED
        elif c.contradicted:
            assert r["verdict"] == sc.FAILS and r["margin"].startswith(sc.CONTRADICTED), c.id
        else:
            assert r["verdict"] == sc.HOLDS, (c.id, r["margin"])
    assert sum(r["verdict"] == sc.HOLDS for r in rows) >= 9


def test_paper_scale_is_a9a_and_epsilon_at_the_papers_T_steps():
    from fedbench.papers import cell_scale

    assert cell_scale("fedac", {"source": "a9a"}, 4096) == sc.PAPER_SCALE  # K = 1
    assert cell_scale("fedac", {"source": "a9a"}, 16, local_steps=256) == sc.PAPER_SCALE  # T = 4,096
    assert cell_scale("fedac", {"source": "epsilon"}, 512) == sc.REDUCED_REAL
    assert cell_scale("fedac", {"source": "epsilon"}, 8, local_steps=64) == sc.REDUCED_REAL
    assert cell_scale("fedac", {"source": "breast_cancer"}, 4096) == sc.REDUCED_REAL
