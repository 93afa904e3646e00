"""Minimax cells (two players, :mod:`fedbench.algorithms.sgda`, :mod:`fedbench.models.minimax`)
through both engines: the vectorized engine equals the sequential reference (float64, 1e-10
relative: parameters of both players, server state incl. the snapshot, every metrics row and the
per-round metrics of both players) for Local SGDA(+), with momentum, and Fed-Norm-SGDA(+), on the
fair-classification and robust-training problems, with heterogeneous local work (τ_i drawn per
round) and partial participation; y stays in Y."""

import pytest
import torch
from test_vectorized import DEVICES, SAMPLING, _compare, _spec, data  # noqa: F401  (data: the fixture)

from fedbench.algorithms import sgda
from fedbench.engine.clients.chunking import PADDING_EFFICIENCY_FLOOR

WORK = {"distribution": "uniform", "low": 1, "high": 4, "per": "round"}
CASES = {
    "local_sgda": {},
    "local_sgda_m": {"momentum": 0.9},
    "local_sgda_plus": {"snapshot_period": 2},
    "local_sgda_plus_m": {"snapshot_period": 2, "momentum": 0.9},
    "fed_norm_sgda": {"y_lr_scale": 1.25},
    "fed_norm_sgda_plus": {"snapshot_period": 3, "tau_eff": "unbiased"},
}
PROBLEMS = {"fair": ({"problem": "fair", "lambda": 0.1}, {"projection": "simplex"}),
            "robust": ({"problem": "robust"}, {"projection": "ball", "radius": 0.5})}


def _minimax_spec(case, sampling, problem, **over):
    minimax, projection = PROBLEMS[problem]
    spec = _spec("fedavg") | {"algorithm": case, "algorithm_name": case.removesuffix("_m"),
                              "hparams": {**CASES[case], **projection},
                              "model": {"name": "mlp", "hidden": [8], "minimax": minimax},
                              "sampling": SAMPLING[sampling]} | over
    spec["local"] |= {"epochs": None, "steps": WORK, "clip_norm": 1.0}
    return spec


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("problem", sorted(PROBLEMS))
@pytest.mark.parametrize("sampling", sorted(SAMPLING))
@pytest.mark.parametrize("case", sorted(CASES))
def test_engines_agree_on_minimax_cells(data, case, sampling, problem, device):  # noqa: F811
    ds, part = data
    projection = PROBLEMS[problem][1]
    spec = _minimax_spec(case, sampling, problem)
    info_s, info_v = _compare(spec, ds, part, device, rtol=1e-10)
    _, y = sgda.split(info_s["params"])
    assert sgda.in_set(y, projection)
    # CPU: finished clients leave their chunk (nothing padded runs); CUDA graphs: the padding floor
    assert (info_v["padding_efficiency"] == 1.0 if device == "cpu"
            else info_v["padding_efficiency"] >= PADDING_EFFICIENCY_FLOOR)
    if "snapshot_period" in CASES[case]:
        assert info_s["server_state"]["snapshot"].keys() == sgda.split(info_s["params"])[0].keys()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", ["local_sgda_m", "fed_norm_sgda_plus"])
def test_float32_within_tolerance(data, case, device):  # noqa: F811
    ds, part = data
    _compare(_minimax_spec(case, "uniform", "fair", dtype="float32"), ds, part, device, rtol=1e-4)


def test_minimax_metrics_rows(data):  # noqa: F811
    """Both players' per-round metrics land in the metrics rows, equal across engines."""
    from fedbench.engine.rounds.loop import train

    ds, part = data
    spec = _spec("fedavg") | {"algorithm": "fed_norm_sgda", "algorithm_name": "fed_norm_sgda",
                              "hparams": {"projection": "simplex"},
                              "model": {"name": "logreg", "minimax": {"problem": "fair", "lambda": 0.1}}}
    spec["local"] |= {"epochs": {**WORK, "per": "client"}}
    rows, info = train(spec, ds, part, device="cpu", engine="vectorized")
    for r in rows:
        assert r["y_norm"] is not None and r["x_step_norm"] > 0 and r["tau_eff"] >= 1.0
        assert r["boosted_pct"] is None
        assert 0.0 <= r["test_worst_class_accuracy"] <= r["test_accuracy"]  # the paper's fair metric
    y = info["params"]["y.class_weights"]
    assert float(y.sum()) == pytest.approx(1.0, abs=1e-12) and float(y.min()) >= 0
    assert float(torch.linalg.norm(y)) == pytest.approx(rows[-1]["y_norm"], rel=1e-12)


@pytest.mark.parametrize("engine", ["sequential", "vectorized"])
def test_fed_norm_is_local_sgda_with_equal_steps_full_participation(data, engine):  # noqa: F811
    """The exact identity through the engines: equal τ_i (local.steps), P = n, server lr 1."""
    from fedbench.engine.rounds.loop import train

    ds, part = data
    out = {}
    for name in ("local_sgda", "fed_norm_sgda"):
        spec = _spec("fedavg") | {"algorithm": name, "algorithm_name": name,
                                  "hparams": {"projection": "simplex", "momentum": 0.9},
                                  "model": {"name": "mlp", "hidden": [8], "minimax": {"problem": "fair"}},
                                  "sampling": {"scheme": "uniform", "participation": 1.0}}
        spec["local"] |= {"epochs": None, "steps": 4}
        out[name] = train(spec, ds, part, device="cpu", engine=engine)[1]["params"]
    for k, v in out["local_sgda"].items():
        torch.testing.assert_close(out["fed_norm_sgda"][k], v, rtol=0, atol=1e-12)


def test_pgd_accuracy_is_measured_for_robust_cells_only(data):  # noqa: F811
    """test_pgd_accuracy (ours): robust cells, in [0, clean accuracy of h_x]; null for fair cells."""
    from fedbench.engine.rounds.evaluate import evaluate
    from fedbench.engine.rounds.loop import train

    ds, part = data
    rows, info = train(_minimax_spec("fed_norm_sgda_plus", "uniform", "robust") | {"eval_initial": True}, ds, part,
                       device="cpu", engine="sequential")
    assert [r["round"] for r in rows][0] == 0
    for r in rows:
        assert 0.0 <= r["test_pgd_accuracy"] <= 1.0
    x_only = {k: (torch.zeros_like(v) if k.startswith("y.") else v) for k, v in info["params"].items()}
    from fedbench.models import build_model

    model = build_model({"name": "mlp", "hidden": [8], "minimax": {"problem": "robust"}}, tuple(ds.x_test.shape[1:]),
                        ds.num_classes)
    x_test = torch.as_tensor(ds.x_test, dtype=torch.float64)
    y_test = torch.as_tensor(ds.y_test, dtype=torch.int64)
    assert rows[-1]["test_pgd_accuracy"] < evaluate(model.apply, x_only, x_test, y_test)[1]
    fair, _ = train(_minimax_spec("fed_norm_sgda", "uniform", "fair"), ds, part, device="cpu", engine="sequential")
    assert all(r["test_pgd_accuracy"] is None for r in fair)
