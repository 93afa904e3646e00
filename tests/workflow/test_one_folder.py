"""One results folder, many config files, weeks of use: nothing overwritten, nothing stale.

In one folder, as a researcher works: the default suite exactly as shipped (its table must be the
README's), the Elastic Aggregation and FedElasticNet quick files (which give `synthetic_1_1` other
parameters than the default suite, and FedElasticNet a `dir0.3` with `sigma`), a user's own config
(partition `iid` of digits at 10 clients where the default suite has 20), then the default suite
again: the last run prepares, partitions and trains nothing, and its tables are bitwise the first
run's; results/metrics.parquet holds every experiment; each experiment's own file survives.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_snakemake import ok, snakemake  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DEFAULT = yaml.safe_load((REPO / "config/config.yaml").read_text())

USER = {  # the user's own file: an id of the default suite's (synthetic_1_1) for other data (its sizes uncapped)
    "datasets": {"digits": {"source": "digits"},
                 "synthetic_1_1": {"source": "synthetic", "alpha": 1.0, "beta": 1.0, "num_clients": 30}},
    "device": "cpu",
    "experiments": {
        "my_sweep": {
            "seeds": [0],
            "rounds": 2,
            "sampling": {"scheme": "uniform", "participation": 0.5},
            "local": {"epochs": 1, "batch_size": 32, "lr": 0.1},
            "datasets": {"digits": {"model": {"name": "logreg"},
                                    "partitions": {"iid": {"scheme": "iid", "num_clients": 10}}},
                         "synthetic_1_1": {"model": {"name": "logreg"},
                                           "partitions": {"natural": {"scheme": "natural"}}}},
            "algorithms": {"fedavg": {}},
        }
    },
}


def quick(name: str, rounds: int = 2) -> dict:
    """A shipped quick file with fewer rounds: its datasets and partitions exactly as shipped."""
    cfg = yaml.safe_load((REPO / f"config/experiments/{name}.yaml").read_text())
    for exp in cfg["experiments"].values():
        exp["rounds"] = rounds
        if "delta_histogram" in exp:
            exp["delta_histogram"] = {"rounds": [1, "last"]}
    return cfg


def jobs_of(proc) -> list[str]:
    """The rules of the jobs a run started (Snakemake's job blocks)."""
    return re.findall(r"^(?:local)?rule (\w+):", proc.stdout + proc.stderr, re.M)


def digests(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root``."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def readme_table() -> list[str]:
    """The default suite's table as the README shows it (its Markdown rows)."""
    text = (REPO / "README.md").read_text()
    block = text.split("The table it writes (`results/tables/baselines.md`", 1)[1]
    return [line for line in block.split("\n\n")[1].splitlines() if line.startswith("|")]


def table_rows(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.startswith("|")]


def this_cpu() -> str:
    """The CPU as README.md names the machine its table was written on: the vendor, family and
    model (/proc/cpuinfo) and torch's CPU kernels (the float summation order depends on them)."""
    import torch

    info = dict(line.split(":", 1) for line in Path("/proc/cpuinfo").read_text().splitlines()[:10] if ":" in line)
    info = {k.strip(): v.strip() for k, v in info.items()}
    return (f"{info.get('vendor_id')} family {info.get('cpu family')} model {info.get('model')}, "
            f"torch CPU kernels {torch.backends.cpu.get_cpu_capability()}")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    w = tmp_path_factory.mktemp("weeks")
    steps = {}
    steps["default"] = ok(snakemake(w, DEFAULT, name="default.yaml"))
    first = {"tables": digests(w / "results/tables"), "metrics": digests(w / "results/metrics"),
             "data": digests(w / "resources/datasets"), "partitions": digests(w / "results/partitions")}
    steps["ea"] = ok(snakemake(w, quick("elastic_aggregation_quick"), name="ea.yaml"))
    steps["fen"] = ok(snakemake(w, quick("fedelasticnet_quick"), name="fen.yaml"))
    steps["user"] = ok(snakemake(w, USER, name="user.yaml"))
    steps["dry"] = ok(snakemake(w, DEFAULT, "-n", name="default.yaml"))
    steps["again"] = ok(snakemake(w, DEFAULT, name="default.yaml"))
    return w, steps, first


@pytest.mark.slow
def test_the_readme_shows_the_table_the_default_suite_writes(folder):
    """Every row on the README's machine; on another CPU the digits rows (the Synthetic(1, 1) rows
    depend on the vector kernels' summation order, as the README says)."""
    w, _, _ = folder
    written, shown = table_rows(w / "results/tables/baselines.md"), readme_table()
    fix = "README.md's default-suite table differs from what `make run` writes: paste results/tables/baselines.md"
    if f"CPU: {this_cpu()};" in " ".join((REPO / "README.md").read_text().split()):
        assert shown == written, fix
    else:
        assert [r for r in shown if "synthetic" not in r] == [r for r in written if "synthetic" not in r], fix


@pytest.mark.slow
def test_clashing_ids_get_their_own_directories_and_leave_the_others_alone(folder):
    w, steps, first = folder
    synthetic = sorted(p.name for p in (w / "resources/datasets").glob("synthetic_1_1-*"))
    assert len(synthetic) == 2  # the default suite's (max_samples_per_client: 400) and the user's (uncapped)
    assert len(list((w / "resources/datasets").glob("digits-*"))) == 1  # the same digits for all: once
    assert len(list((w / "resources/datasets").glob("mnist5k-*"))) == 1  # the two quick files' mnist5k: once
    assert "prepare_dataset" not in jobs_of(steps["fen"])  # its mnist5k is the EA quick file's
    now = digests(w / "resources/datasets")
    assert all(now[f] == h for f, h in first["data"].items())  # nothing the default suite prepared changed
    parts = digests(w / "results/partitions")
    assert all(parts[f] == h for f, h in first["partitions"].items())
    iid = sorted(p.name for p in (w / "results/partitions").glob("digits-*/iid-*"))
    assert len(iid) == 2  # 20 clients (default suite, quick files) and the user's 10


@pytest.mark.slow
def test_the_default_suite_again_runs_nothing_and_its_tables_are_bitwise_the_first(folder):
    w, steps, first = folder
    assert "Nothing to be done" in steps["dry"].stdout + steps["dry"].stderr, jobs_of(steps["dry"])
    assert jobs_of(steps["again"]) == []
    for kind in ("tables", "metrics"):
        now = digests(w / f"results/{kind}")
        # the scorecard is the folder's view (rules/scorecard.smk, like results/metrics.parquet): the
        # quick files' papers joined it; everything else is the default suite's, bitwise
        mine = {f: h for f, h in first[kind].items() if not f.startswith("scorecard.")}
        assert {f: now.get(f) for f in mine} == mine, kind
    card = (w / "results/tables/scorecard.md").read_text()
    assert "Elastic Aggregation" in card and "FedElasticNet" in card  # the earlier config files' papers


@pytest.mark.slow
def test_every_experiment_of_the_folder_is_collected(folder):
    w, _, _ = folder
    files = sorted(p.stem for p in (w / "results/metrics").glob("*.parquet"))
    expected = ["baselines", "elastic_aggregation_quick", "fedelasticnet_quick_lambda1_sweep",
                "fedelasticnet_quick_p10", "my_sweep"]
    assert files == expected
    everything = pl.read_parquet(w / "results/metrics.parquet")
    assert sorted(everything.get_column("experiment").unique().to_list()) == expected
    for name in expected:  # the folder's file holds each experiment's rows exactly
        own = pl.read_parquet(w / f"results/metrics/{name}.parquet")
        assert everything.filter(pl.col("experiment") == name).select(own.columns).equals(own)
    assert (w / "results/tables/elastic_aggregation_quick.md").is_file()  # left as they are
