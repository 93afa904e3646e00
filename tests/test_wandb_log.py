"""fedbench.wandb_log: offline W&B runs read back from their files; the report's blocks; no network."""

from __future__ import annotations

import json
import math
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fedbench.metrics.schema import METRICS_SCHEMA
from fedbench.wandb_log import (
    build_report,
    has_api_key,
    log_cell,
    offline_runs_to_sync,
    read_offline_run,
    report_blocks,
    report_sections,
    resolve_mode,
    run_config,
)

SPEC = {
    "experiment": "exp", "dataset": "digits", "partition": "iid", "algorithm": "fedprox_mu0.1", "seed": 3,
    "algorithm_name": "fedprox", "hparams": {"mu": 0.1}, "model": {"name": "logreg"},
    "local": {"epochs": 1, "steps": None, "batch_size": 32, "lr": 0.1, "lr_decay": 1.0, "weight_decay": 0.0,
              "clip_norm": None},
    "sampling": {"scheme": "uniform", "participation": 0.5}, "rounds": 1500, "eval_every": 1,
    "target_accuracy": 0.5, "dtype": "float32",
}


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """A real offline W&B: no WANDB_MODE override (conftest sets disabled), no key, no netrc.

    wandb.init starts a wandb-core service and exports WANDB_SERVICE into os.environ, where
    subprocesses started later (the workflow tests) would pick it up and log through this
    process's service: stop it and remove the variable afterwards."""
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_SERVICE", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    yield
    import wandb

    wandb.teardown()
    os.environ.pop("WANDB_SERVICE", None)


def write_cell(tmp_path, rounds: int, diverge_at: int | None = None):
    rows = []
    for t in range(1, rounds + 1):
        bad = diverge_at is not None and t == diverge_at
        rows.append({
            "experiment": "exp", "dataset": "digits", "partition": "iid", "algorithm": "fedprox_mu0.1",
            "algorithm_name": "fedprox", "hparams_id": "abc123", "seed": 3, "round": t, "clients_sampled": 2,
            "train_loss": math.nan if bad else 1.0 / t, "test_loss": 1.5 / t,
            "test_accuracy": math.nan if bad else 1 - 1.0 / (t + 1), "uplink_floats": 100 * t,
            "uplink_nonzeros": 90 * t, "uplink_entropy_bits": 2.5 * t, "downlink_floats": 200 * t,
            "wall_seconds": 0.01 * t, "status": "diverged" if bad else "ok",
        })
        if bad:
            break
    metrics = tmp_path / "metrics.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=METRICS_SCHEMA), metrics)
    last = rows[-1]
    summary = {"spec": SPEC, "hparams_id": "abc123", "status": last["status"], "rounds_completed": last["round"],
               "final_test_accuracy": last["test_accuracy"], "best_test_accuracy": 0.99,
               "final_train_loss": last["train_loss"], "uplink_floats": last["uplink_floats"], "wall_seconds": 1.5,
               "code_version": "0123456789abcdef", "job": {"host": "h", "slurm": None}}
    summary_path = tmp_path / "summary.json"
    summary_path.write_text(json.dumps(summary))
    return metrics, summary_path, rows


def test_a_cell_becomes_an_offline_run_with_history_config_and_summary(offline, tmp_path):
    metrics, summary, rows = write_cell(tmp_path, rounds=1500)  # > 32 KiB: records span log blocks
    rec = log_cell(metrics, summary, {"project": "fb-test", "entity": None, "mode": "offline"},
                   root=tmp_path / "wandb", paper="FedProx (Li et al. 2020)", code_version="0123456789abcdef")
    assert rec["mode"] == "offline" and rec["group"] == "exp/digits/iid" and rec["job_type"] == "fedprox_mu0.1"
    assert rec["rounds_logged"] == 1500
    run = read_offline_run(rec["dir"])
    assert run["finished"]
    assert run["run"]["id"] == rec["id"] and run["run"]["project"] == "fb-test"
    assert run["run"]["group"] == "exp/digits/iid" and run["run"]["job_type"] == "fedprox_mu0.1"
    assert run["run"]["name"] == "fedprox_mu0.1/seed=3"
    assert sorted(run["run"]["tags"]) == ["FedProx (Li et al. 2020)", "seed=3"]
    cfg = run["config"]
    assert cfg["hparams"] == {"mu": 0.1} and cfg["local"]["lr"] == 0.1 and cfg["seed"] == 3
    assert cfg["code_version"] == "0123456789abcdef" and cfg["hparams_id"] == "abc123"
    assert cfg["paper"] == "FedProx (Li et al. 2020)"
    hist = run["history"]
    assert [h["_step"] for h in hist] == list(range(1, 1501))
    assert [h["round"] for h in hist] == list(range(1, 1501))
    assert [h["test_accuracy"] for h in hist] == [r["test_accuracy"] for r in rows]
    assert hist[9]["uplink_floats"] == 1000 and "status" not in hist[0] and "experiment" not in hist[0]
    assert run["summary"]["final_test_accuracy"] == rows[-1]["test_accuracy"]
    assert run["summary"]["status"] == "ok" and run["summary"]["rounds_completed"] == 1500


def test_a_diverged_cell_logs_nan_and_its_status(offline, tmp_path):
    metrics, summary, rows = write_cell(tmp_path, rounds=5, diverge_at=3)
    rec = log_cell(metrics, summary, {"project": "fb-test", "mode": "offline"}, root=tmp_path / "wandb")
    run = read_offline_run(rec["dir"])
    assert len(run["history"]) == 3
    assert math.isnan(run["history"][-1]["test_accuracy"])
    assert run["summary"]["status"] == "diverged"


def test_modes_and_api_key(monkeypatch, tmp_path):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    assert not has_api_key()
    assert resolve_mode("offline")[0] == "offline"
    assert resolve_mode("online") == ("offline", "no W&B API key is configured (WANDB_API_KEY or `wandb login`)")
    (tmp_path / "netrc").write_text("machine api.wandb.ai\n  login user\n  password abcdef\n")
    (tmp_path / "netrc").chmod(0o600)
    assert has_api_key() and resolve_mode("online")[0] == "online"
    monkeypatch.setenv("WANDB_MODE", "disabled")
    assert resolve_mode("online") == ("disabled", "WANDB_MODE is set")


def test_only_unsynced_offline_runs_are_synced(tmp_path):
    a, b = tmp_path / "offline-run-a", tmp_path / "offline-run-b"
    for d in (a, b):
        d.mkdir()
        (d / f"run-{d.name[-1]}.wandb").write_bytes(b"")
    (b / "run-b.wandb.synced").write_text("")
    records = [{"mode": "offline", "dir": str(a)}, {"mode": "offline", "dir": str(b)},
               {"mode": "online", "dir": str(a)}, {"mode": "disabled", "dir": None}]
    assert offline_runs_to_sync(records) == [str(a)]


def test_run_config_is_the_spec_plus_provenance():
    cfg = run_config({"spec": SPEC, "hparams_id": "abc123"}, code_version="c0de", paper=None)
    assert cfg == {**SPEC, "hparams_id": "abc123", "code_version": "c0de"}


SECTIONS = [
    {"name": "baselines", "panels": [("digits", "iid"), ("digits", "dir0.3")], "table_md": "| a |\n|---|\n| 1 |\n",
     "paper": "paper-000"},
    {"name": "fedprox", "panels": [("synthetic_1_1", "natural")], "table_md": "| b |\n"},
]


def test_report_blocks_one_section_per_experiment_without_network(monkeypatch):
    import wandb_workspaces.reports.v2 as wr
    import wandb_workspaces.reports.v2.interface as interface

    def no_api():
        raise AssertionError("the report builder must not call the W&B API")

    monkeypatch.setattr(interface, "_get_api", no_api)
    blocks = report_blocks(SECTIONS, entity="me", project="fb")
    h1 = [b.text for b in blocks if isinstance(b, wr.H1)]
    assert h1 == ["Experiment baselines", "Experiment fedprox"]
    grids = [b for b in blocks if isinstance(b, wr.PanelGrid)]
    assert len(grids) == 3  # one per (dataset, partition) of each experiment
    rs = grids[0].runsets[0]
    assert (rs.entity, rs.project, rs.groupby) == ("me", "fb", ["config.algorithm"])
    assert "Config('experiment') = 'baselines'" in rs.filters and "Config('partition') = 'iid'" in rs.filters
    kinds = [type(p).__name__ for p in grids[0].panels]
    assert kinds == ["LinePlot", "LinePlot", "BarPlot"]
    acc = grids[0].panels[0]
    assert acc.x == "round" and acc.y == ["test_accuracy"] and acc.groupby_aggfunc == "mean"
    tables = [b.text for b in blocks if isinstance(b, wr.MarkdownBlock)]
    assert tables == [SECTIONS[0]["table_md"], SECTIONS[1]["table_md"]]
    assert any(isinstance(b, wr.P) and "paper-000" in b.text for b in blocks)

    report = build_report(SECTIONS, entity="me", project="fb")  # not saved: no network
    assert report.entity == "me" and report.project == "fb" and len(report.blocks) == len(blocks)


def test_report_sections_follow_the_config():
    from pathlib import Path

    import yaml

    from fedbench.config import expand_cells

    cfg = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "config.yaml").read_text())
    cfg["experiments"]["baselines"]["paper"] = "fedelasticnet"
    secs = report_sections(expand_cells(cfg), {"baselines": "| t |\n"})
    assert [s["name"] for s in secs] == ["baselines"]
    assert secs[0]["panels"] == [("digits", "iid"), ("digits", "dir0.3"), ("synthetic_1_1", "natural")]
    assert secs[0]["paper"] == "FedElasticNet (Kim et al., 2022)" and secs[0]["table_md"] == "| t |\n"


def test_report_sections_name_a_registered_paper():
    cells = [{"experiment": "e", "dataset": "d", "partition": p, "paper": "fedelasticnet"} for p in ("iid", "iid", "x")]
    (sec,) = report_sections(cells, {"e": "| t |\n"})
    assert sec["panels"] == [("d", "iid"), ("d", "x")] and sec["paper"] == "FedElasticNet (Kim et al., 2022)"
