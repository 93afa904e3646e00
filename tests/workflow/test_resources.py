"""What a train job asks the scheduler for, per experiment, as Snakemake plans it (dry runs).

With the Slurm profile (and the workflow profile profiles/default, which Snakemake always adds
and which sets cores: 2): runtime, mem_mb, cpus_per_task, gpu, gres and slurm_partition come from
the config's `resources`; the CPUs are not capped by --cores; a GPU only where asked for.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def _experiment(resources: dict | None) -> dict:
    exp = {
        "seeds": [0],
        "rounds": 2,
        "local": {"epochs": 1, "batch_size": 32, "lr": 0.1},
        "datasets": {"digits": {"model": {"name": "logreg"},
                                "partitions": {"iid": {"scheme": "iid", "num_clients": 4}}}},
        "algorithms": {"fedavg": {}},
    }
    if resources:
        exp["resources"] = resources
    return exp


CONFIG = {
    "datasets": {"digits": {"source": "digits"}},
    "experiments": {
        "small": _experiment(None),
        "big": _experiment({"runtime": 90, "mem_mb": 16000, "cpus": 4, "gpus": 1, "slurm_partition": "gpu"}),
        "shared": _experiment({"gres": "shard:1"}),
    },
}


def planned(tmp_path: Path, config: dict, *args: str) -> list[str]:
    """The job blocks a dry run of ``config`` prints (a block starts with its rule)."""
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"}
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path),
         "--configfile", str(cfg), "-n", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return re.split(r"\n(?=(?:local)?rule \w+:)", proc.stdout)


def resources(block: str) -> dict[str, str]:
    """The values of a job block's resources line."""
    return dict(kv.split("=", 1) for kv in re.search(r"^\s+resources: (.*)$", block, re.M).group(1).split(", "))


def dry_run(tmp_path: Path, *args: str) -> dict[str, dict]:
    """{experiment: the resources line's values} of the train jobs of a dry run."""
    out = {}
    for block in planned(tmp_path, CONFIG, *args):
        if not block.startswith("rule train:"):
            continue
        exp = re.search(r"wildcards: experiment=([^,]+)", block).group(1)
        threads = re.search(r"^\s+threads: (\d+)$", block, re.M)
        out[exp] = resources(block)
        out[exp]["threads"] = threads.group(1) if threads else "1"
    assert sorted(out) == ["big", "shared", "small"], out
    return out


def test_slurm_profile_takes_train_resources_from_the_config(tmp_path):
    res = dry_run(tmp_path, "--profile", str(REPO / "profiles" / "slurm"))
    big, small, shared = res["big"], res["small"], res["shared"]
    assert (big["runtime"], big["mem_mb"], big["cpus_per_task"], big["gpu"]) == ("90", "16000", "4", "1")
    assert big["slurm_partition"] == "gpu"
    assert big["threads"] == "2"  # threads are capped by the workflow profile's cores: 2 ...
    assert big["cpus_per_task"] == "4"  # ... but what Slurm is asked for is not
    assert (small["runtime"], small["mem_mb"], small["cpus_per_task"]) == ("30", "2000", "1")
    assert small.get("gpu", "0") == "0" and "gres" not in small and "slurm_partition" not in small
    assert shared["gres"] == "shard:1" and shared.get("gpu", "0") == "0"


def test_local_dry_run_shows_what_a_cluster_job_would_ask_for(tmp_path):
    """A dry run keeps the scheduler resources (it plans for any executor); a real local run
    drops them (test_a_retry_asks_for_more_time_and_memory)."""
    res = dry_run(tmp_path, "--cores", "3")
    assert res["big"]["runtime"] == "90" and res["big"]["cpus_per_task"] == "4"
    assert res["big"]["threads"] == "3" and res["big"]["gpu"] == "1" and res["small"]["threads"] == "1"


@pytest.mark.slow
def test_a_retry_asks_for_more_time_and_memory(tmp_path):
    """A train job that fails (device: cuda on a machine without CUDA) is retried with
    attempt x the configured runtime and memory."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("needs a machine where device: cuda fails")
    cfg = {"datasets": {"digits": {"source": "digits"}}, "device": "cuda",
           "experiments": {"e": _experiment({"runtime": 10, "mem_mb": 700})}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    env = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"}
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path),
         "--configfile", str(tmp_path / "config.yaml"), "--cores", "1", "--retries", "2",
         "results/runs/e/digits/iid/fedavg/seed=0/metrics.parquet"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    attempts = re.findall(r"^\s+resources: .*mem_mb=(\d+)", out, re.M)
    assert attempts == ["700", "1400", "2100"], out[-3000:]
    # a local run declares no scheduler-only resources: its job blocks show none (the runtime
    # still grows with the attempt for a cluster: tests/config/test_runtime.py::test_job_resources_grow...)
    train_lines = re.findall(r"^\s+resources: .*mem_mb=.*$", out, re.M)
    slurm_only = [line for line in train_lines if re.search(r"runtime|cpus_per_task|slurm_partition|gres", line)]
    assert not slurm_only, out[-3000:]


@pytest.mark.parametrize("per_job,runtimes", [(1, ["25", "25"]), (2, ["50"])])
def test_a_job_of_several_stacked_groups_asks_for_their_runtime(tmp_path, per_job, runtimes):
    """stack_groups_per_job: a job of n groups (here fedavg's and fedprox's seeds) asks Slurm for
    n times the experiment's runtime; memory and CPUs stay the experiment's."""
    exp = _experiment({"runtime": 25, "mem_mb": 3000})
    exp.update(seeds=[0, 1], stack=True, stack_groups_per_job=per_job, algorithms={"fedavg": {}, "fedprox": {}})
    config = {"datasets": {"digits": {"source": "digits"}}, "experiments": {"s": exp}}
    blocks = planned(tmp_path, config, "--profile", str(REPO / "profiles" / "slurm"))
    res = [resources(b) for b in blocks if b.startswith("rule train_s_")]
    assert [r["runtime"] for r in res] == runtimes, res
    assert all(r["mem_mb"] == "3000" and r["cpus_per_task"] == "1" for r in res)
