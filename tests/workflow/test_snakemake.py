"""The Snakemake workflow, run as a user runs it: `snakemake -s <repo>/Snakefile` in a temp dir.

- a dry run of a tiny config plans the expected jobs;
- a real tiny run (2 rounds, 1 seed, 2 algorithms, digits iid, logreg) writes the tables, plots
  and a report; changing one algorithm's hyperparameter then reruns only that algorithm's train
  cells (plus collect/aggregate), and a new seed adds only its new cells;
- an invalid config fails before any job with a message naming the key.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SNAKEFILE = REPO / "Snakefile"

TINY = {
    "datasets": {"digits": {"source": "digits"}},
    "device": "cpu",
    "experiments": {
        "tiny": {
            "seeds": [0],
            "rounds": 2,
            "target_accuracy": 0.5,
            "sampling": {"scheme": "uniform", "participation": 0.5},
            "local": {"epochs": 1, "batch_size": 32, "lr": 0.1},
            "datasets": {
                "digits": {
                    "model": {"name": "logreg"},
                    "partitions": {"iid": {"scheme": "iid", "num_clients": 4}},
                }
            },
            "algorithms": {"fedavg": {}, "fedprox": {"mu": 0.01}},
        }
    },
}


def snakemake(workdir: Path, config: dict, *args: str, name: str = "config.yaml") -> subprocess.CompletedProcess:
    """Run the workflow on ``config`` (written to ``workdir/name``) from ``workdir``."""
    cfg = workdir / name
    cfg.write_text(yaml.safe_dump(config, sort_keys=False))
    env = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"}
    env["MPLBACKEND"] = "Agg"
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--directory", str(workdir),
           "--configfile", str(cfg), "--cores", "2", *args]
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=600)


def prepared(workdir: Path, dataset: str) -> Path:
    """The one prepared directory of ``dataset`` in ``workdir``: resources/datasets/<id>-<digest>."""
    (d,) = (workdir / "resources/datasets").glob(f"{dataset}-????????")
    return d


def partition_dir(workdir: Path, dataset: str, partition: str, seed: int = 0) -> Path:
    """The one directory of a partition of ``dataset``: results/partitions/<id>-<d>/<partition>-<p>/seed=<s>."""
    (d,) = (workdir / "results/partitions").glob(f"{dataset}-????????/{partition}-????????/seed={seed}")
    return d


def planned_jobs(out: str) -> list[tuple[str, dict]]:
    """(rule, wildcards) of every job a dry run prints."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", out):
        m = re.match(r"(?:local)?rule (\w+):", block)
        if not m:
            continue
        wc = re.search(r"^\s+wildcards: (.*)$", block, re.M)
        wildcards = dict(kv.split("=", 1) for kv in wc.group(1).split(", ")) if wc else {}
        jobs.append((m.group(1), wildcards))
    return jobs


def ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, f"snakemake failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return proc


def check_estimate(proc: subprocess.CompletedProcess, config: dict) -> None:
    """A dry run of ``config`` printed the cost estimate: one line per experiment; and the console
    cut its job blocks' long file lists (profiles/default: logger fedbench). Called on the dry run
    of every shipped config file (tests/workflow/test_estimate.py lists where)."""
    lines = [line for line in proc.stderr.splitlines() if line.startswith("fedbench: estimate: ")]
    for experiment in config["experiments"]:
        mine = [line for line in lines if line.startswith(f"fedbench: estimate: {experiment}: ")]
        assert len(mine) == 1, (experiment, lines)
        assert re.search(r"\d+ training jobs to run \(of \d+\), ~[\d.]+ (s|min|h) of (CPU|GPU) time", mine[0])
    # Snakemake's own console printed fedac_quick's 756 collected files on one line of ~100,000 characters
    longest = max((proc.stdout + proc.stderr).splitlines(), key=len)
    assert len(longest) < 2000, longest[:300]


def test_dry_run_of_tiny_config(tmp_path):
    proc = ok(snakemake(tmp_path, TINY, "-n"))
    jobs = planned_jobs(proc.stdout + proc.stderr)
    counts = {}
    for rule, _ in jobs:
        counts[rule] = counts.get(rule, 0) + 1
    assert counts == {"prepare_dataset": 1, "partition": 1, "train": 2, "collect": 1, "collect_folder": 1,
                      "aggregate": 1, "compare": 1, "scorecard": 1, "all": 1}
    trains = sorted(w["algorithm"] for r, w in jobs if r == "train")
    assert trains == ["fedavg", "fedprox"]
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    "mutate, fragment",
    [
        (lambda c: c["experiments"]["tiny"]["algorithms"]["fedprox"].update(mu=-1),
         "experiments.tiny.algorithms.fedprox.mu: must be >= 0 (got -1)"),
        (lambda c: c["experiments"]["tiny"].update(rounds=0), "experiments.tiny.rounds"),
        (lambda c: c["experiments"]["tiny"]["datasets"]["digits"]["partitions"]["iid"].update(num_clients=5000),
         "experiments.tiny.datasets.digits.partitions.iid.num_clients: num_clients=5000 exceeds the 1437 train"),
    ],
    ids=["check_config-negative-mu", "schema-zero-rounds", "size-too-many-clients"],
)
def test_invalid_config_fails_before_any_job(tmp_path, mutate, fragment):
    bad = copy.deepcopy(TINY)
    mutate(bad)
    proc = snakemake(tmp_path, bad)  # a real run, not a dry run: nothing may start
    assert proc.returncode != 0
    assert fragment in proc.stderr, proc.stderr[-3000:]
    assert "Invalid config" in proc.stderr
    assert not (tmp_path / "results").exists() and not (tmp_path / "resources").exists()


@pytest.mark.parametrize(
    "override",
    ["wandb={enabled: true, mode: offline}", "data={mirror: /some/dir, trust_mirror_checksums: true}"],
    ids=["wandb", "data-mirror"],
)
def test_nested_command_line_config_of_the_readme_is_typed(tmp_path, override):
    """The README's one-liners on the default config: Snakemake passes nested --config values as
    strings ("true"), which the workflow types as the schema says before checking them."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text((REPO / "config" / "config.yaml").read_text())
    env = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"}
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--directory", str(tmp_path), "--cores", "2",
           "-n", "--config", override]
    proc = ok(subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600))
    check_estimate(proc, yaml.safe_load((REPO / "config" / "config.yaml").read_text()))  # the default suite's


def test_a_config_file_with_a_duplicate_key_fails_before_any_job(tmp_path):
    text = yaml.safe_dump(TINY, sort_keys=False).replace("  rounds: 2\n", "  rounds: 2\n    rounds: 3\n", 1)
    (tmp_path / "dup.yaml").write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"}
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--directory", str(tmp_path), "--cores", "2",
           "--configfile", str(tmp_path / "dup.yaml")]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    line = text.splitlines().index("    rounds: 3") + 1
    assert f"dup.yaml:{line}: key 'rounds' given twice in one mapping (first at line {line - 1})" in proc.stderr, \
        proc.stderr[-3000:]
    assert not (tmp_path / "results").exists() and not (tmp_path / "resources").exists()


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The tiny config run for real once; shared by the slow tests below."""
    workdir = tmp_path_factory.mktemp("tiny_run")
    proc = ok(snakemake(workdir, TINY))
    (workdir / "console.txt").write_text(proc.stdout + proc.stderr)
    return workdir


@pytest.mark.slow
def test_the_console_ends_with_the_tables_and_shows_no_cluster_settings(tiny_run):
    """issue: what a researcher sees at the end of `snakemake`: the experiment's table and where
    the report is; job blocks without Slurm resources or empty shell-command lines."""
    out = (tiny_run / "console.txt").read_text()
    tail = out[out.index("results/tables/tiny.md:"):]
    assert "| fedprox " in tail and "final acc. (%)" in tail
    assert "snakemake --report results/report.html" in tail
    resources = re.findall(r"^\s+resources: (.*)$", out, re.M)
    assert resources and not [r for r in resources if re.search(r"runtime|cpus_per_task|slurm", r)]
    assert "Shell command: None" not in out


@pytest.mark.slow
def test_end_to_end_tiny_run_and_report(tiny_run):
    w = tiny_run
    for rel in ("results/tables/tiny.md", "results/tables/tiny.csv", "results/plots/tiny_accuracy.png",
                "results/metrics.parquet", "results/metrics/tiny.parquet",
                prepared(w, "digits") / "meta.json",
                partition_dir(w, "digits", "iid") / "partition.parquet",
                partition_dir(w, "digits", "iid") / "class_counts.parquet",
                partition_dir(w, "digits", "iid") / "heatmap.png",
                "results/runs/tiny/digits/iid/fedprox/seed=0/summary.json",
                "results/logs/train/tiny/digits/iid/fedavg/seed=0.log"):
        assert (w / rel).exists(), rel
    df = pl.read_parquet(w / "results/metrics.parquet")
    assert df.height == 4  # 2 cells × 2 rounds
    assert set(df.get_column("algorithm")) == {"fedavg", "fedprox"}
    md = (w / "results/tables/tiny.md").read_text()
    assert "| fedprox " in md and "rounds to 50%" in md
    assert pl.read_csv(w / "results/tables/tiny.csv").height == 2
    assert (w / "results/plots/tiny_accuracy.png").stat().st_size > 10_000

    report = w / "results" / "report.html"
    ok(snakemake(w, TINY, "--report", str(report)))
    html = report.read_text(errors="replace")
    assert report.stat().st_size > 50_000
    for needle in ("tiny_accuracy.png", "heatmap.png", "tiny.csv"):
        assert needle in html
    # the landing page leads with each experiment's formatted table (% with the seeds column),
    # starts at the top of the window (not Snakemake's vertically centred layout), and its text
    # renders without a docutils error
    desc = json.loads(re.search(r"workflow_desc = (\".*?(?<!\\)\");", html, re.S).group(1))
    assert 'class="fedbench-table"' in desc and "<th class=\"r\">final acc. (%)</th>" in desc
    assert "<td>fedprox</td>" in desc and "align-items: flex-start" in desc
    assert "System Message" not in desc
    # ... after the scorecard (rule scorecard), which says that no experiment of this config feeds a paper
    assert 0 < desc.index("fedbench-scorecard") < desc.index("<td>fedprox</td>")
    assert "no claim to decide" in desc


@pytest.mark.slow
def test_changed_hyperparameter_reruns_only_its_cells(tiny_run):
    w = tiny_run
    same = ok(snakemake(w, TINY, "-n"))
    assert "Nothing to be done" in same.stdout + same.stderr

    changed = copy.deepcopy(TINY)
    changed["experiments"]["tiny"]["algorithms"]["fedprox"]["mu"] = 0.5
    changed["device"] = "auto"  # runtime only: must not rerun anything by itself
    jobs = planned_jobs(ok(snakemake(w, changed, "-n", name="changed.yaml")).stdout)
    assert sorted(r for r, _ in jobs) == ["aggregate", "all", "collect", "collect_folder", "compare", "scorecard",
                                          "train"]
    assert [w_["algorithm"] for r, w_ in jobs if r == "train"] == ["fedprox"]

    runtime_only = copy.deepcopy(TINY)
    runtime_only["device"] = "auto"
    proc = ok(snakemake(w, runtime_only, "-n", name="runtime.yaml"))
    assert "Nothing to be done" in proc.stdout + proc.stderr


@pytest.mark.slow
def test_new_seed_adds_only_new_cells(tiny_run):
    more = copy.deepcopy(TINY)
    more["experiments"]["tiny"]["seeds"] = [0, 1]
    jobs = planned_jobs(ok(snakemake(tiny_run, more, "-n", name="more.yaml")).stdout)
    trains = sorted((w["algorithm"], w["seed"]) for r, w in jobs if r == "train")
    assert trains == [("fedavg", "1"), ("fedprox", "1")]
    assert [w["seed"] for r, w in jobs if r == "partition"] == ["1"]
    assert not any(r == "prepare_dataset" for r, _ in jobs)


@pytest.mark.slow
def test_the_reference_engine_gives_the_same_tables(tiny_run, tmp_path):
    """The default (vectorized) engine and the sequential reference, run by the workflow on the same
    config, give the same metrics (float32 rounding apart) and the same tables."""
    seq = copy.deepcopy(TINY)
    seq["engine"] = "sequential"
    ok(snakemake(tmp_path, seq))
    for w, engine in ((tiny_run, "vectorized"), (tmp_path, "sequential")):
        summary = json.loads((w / "results/runs/tiny/digits/iid/fedavg/seed=0/summary.json").read_text())
        assert summary["engine"] == engine
    keys = ["algorithm", "seed", "round"]
    a = pl.read_parquet(tiny_run / "results/metrics.parquet").sort(keys)
    b = pl.read_parquet(tmp_path / "results/metrics.parquet").sort(keys)
    assert a.select(keys + ["clients_sampled", "uplink_floats", "uplink_nonzeros", "downlink_floats", "status"]).equals(
        b.select(keys + ["clients_sampled", "uplink_floats", "uplink_nonzeros", "downlink_floats", "status"]))
    for col in ("train_loss", "test_loss", "uplink_entropy_bits"):
        assert np.allclose(a[col].to_numpy(), b[col].to_numpy(), rtol=1e-4, atol=0), col
    # accuracy counts test predictions: float32 rounding may flip at most one borderline sample
    n_test = json.loads((prepared(tiny_run, "digits") / "meta.json").read_text())["n_test"]
    assert np.abs(a["test_accuracy"].to_numpy() - b["test_accuracy"].to_numpy()).max() <= 1.0 / n_test + 1e-12
    ta, tb = pl.read_csv(tiny_run / "results/tables/tiny.csv"), pl.read_csv(tmp_path / "results/tables/tiny.csv")
    assert ta.columns == tb.columns and ta.height == tb.height


@pytest.mark.slow
def test_stacked_seeds_run_one_job_per_cell_with_the_tables_of_one_job_per_seed(tmp_path):
    """`stack: true`: one train job per group of stackable cells (here: all seeds of one
    algorithm) trains them in lockstep and writes each seed's outputs where rule train would, with
    the metrics of the seeds run one by one (float32: to rounding; here the chunks happen to agree)."""
    cfg = copy.deepcopy(TINY)
    cfg["experiments"]["tiny"]["seeds"] = [0, 1, 2]
    cfg["experiments"]["tiny"]["delta_histogram"] = True  # the stacked rule declares those outputs too
    stacked = copy.deepcopy(cfg)
    stacked["experiments"]["tiny"]["stack"] = True
    out = ok(snakemake(tmp_path, stacked, "-n")).stdout
    trains = sorted(r for r, _ in planned_jobs(out) if r.startswith("train"))
    assert len(trains) == 2 and all(r.startswith("train_tiny_") for r in trains), trains
    (tmp_path / "stacked").mkdir()
    (tmp_path / "one").mkdir()
    ok(snakemake(tmp_path / "stacked", stacked))
    ok(snakemake(tmp_path / "one", cfg))
    keys = ["algorithm", "seed", "round"]
    a = pl.read_parquet(tmp_path / "stacked/results/metrics.parquet").sort(keys)
    b = pl.read_parquet(tmp_path / "one/results/metrics.parquet").sort(keys)
    assert a.height == b.height == 2 * 3 * 2
    exact = keys + ["clients_sampled", "uplink_floats", "uplink_nonzeros", "downlink_floats", "status"]
    assert a.select(exact).equals(b.select(exact))
    for col in ("train_loss", "test_loss", "test_accuracy", "uplink_entropy_bits"):
        assert np.allclose(a[col].to_numpy(), b[col].to_numpy(), rtol=1e-4, atol=1e-6), col
    summary = json.loads((tmp_path / "stacked/results/runs/tiny/digits/iid/fedavg/seed=1/summary.json").read_text())
    assert summary["stacked_cells"] == [f"tiny/digits/iid/fedavg/seed={s}" for s in (0, 1, 2)]
    assert summary["spec"]["seed"] == 1 and summary["fingerprint"]
    assert len(list((tmp_path / "stacked/results/logs/train/tiny/digits/iid").glob("stack-*.log"))) == 2
    for seed in (0, 1, 2):
        rel = f"results/runs/tiny/digits/iid/fedprox/seed={seed}/delta_histogram.parquet"
        ha, hb = pl.read_parquet(tmp_path / "stacked" / rel), pl.read_parquet(tmp_path / "one" / rel)
        assert ha.height > 0 and ha.equals(hb), rel
    # the stacked run is complete: a rerun plans nothing
    assert "Nothing to be done" in ok(snakemake(tmp_path / "stacked", stacked, "-n")).stdout

    # stack_groups_per_job: 2: both groups (fedavg's and fedprox's seeds) one after another in one job,
    # one process, with the same bits as one job per group
    bundled = copy.deepcopy(stacked)
    bundled["experiments"]["tiny"]["stack_groups_per_job"] = 2
    (tmp_path / "bundled").mkdir()
    out = ok(snakemake(tmp_path / "bundled", bundled, "-n")).stdout
    trains = [r for r, _ in planned_jobs(out) if r.startswith("train")]
    assert len(trains) == 1 and "_and_1_more_" in trains[0], trains
    ok(snakemake(tmp_path / "bundled", bundled))
    c = pl.read_parquet(tmp_path / "bundled/results/metrics.parquet").sort(keys)
    timing = [col for col in c.columns if "seconds" in col]
    assert c.drop(timing).equals(a.drop(timing))
    (log,) = [p.read_text() for p in (tmp_path / "bundled/results/logs/train/tiny/digits/iid").glob("stack-*.log")]
    assert "(group 1 of 2 in this job)" in log and "(group 2 of 2 in this job)" in log
    for alg in ("fedavg", "fedprox"):
        one = json.loads((tmp_path / f"stacked/results/runs/tiny/digits/iid/{alg}/seed=0/summary.json").read_text())
        two = json.loads((tmp_path / f"bundled/results/runs/tiny/digits/iid/{alg}/seed=0/summary.json").read_text())
        assert two["code_version"] == one["code_version"] and two["fingerprint"] == one["fingerprint"]
        assert two["stacked_cells"] == [f"tiny/digits/iid/{alg}/seed={s}" for s in (0, 1, 2)]
    assert "Nothing to be done" in ok(snakemake(tmp_path / "bundled", bundled, "-n")).stdout
