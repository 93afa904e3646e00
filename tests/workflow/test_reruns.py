"""Incremental reruns: after a real run, dry runs plan exactly the jobs a change needs.

The workflow runs from a copy of the repository in a temp dir (Snakefile, rules, workflow
scripts, profiles and src/, mtimes preserved) with PYTHONPATH pointing at the copy's src/, so the
tests can edit library code without touching the real source tree. Each test undoes its edits.

- (a) a changed hyperparameter reruns only its cells: tests/workflow/test_snakemake.py;
- (b) a new seed (test_snakemake.py) or a new algorithm adds only the new cells;
- (c) editing an algorithm module reruns the cells that use it (its code version is in the train
  rule's params) and no others; a comment-only edit reruns nothing;
- (c') editing a model reruns the cells that use it, the engine every cell, a dataset reader its
  dataset's prepare/partition/train chain; comment and docstring edits rerun nothing;
- (d) table formatting (config `tables.decimals`, the table module, the aggregate script)
  reruns only aggregation;
- turning W&B on logs the existing cells without retraining them, offline, readable back.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_snakemake import TINY  # noqa: E402  (the same tiny config as the basic workflow tests)


class Workflow:
    """A copy of the repository and a work directory that ran TINY once."""

    def __init__(self, root: Path):
        self.repo = root / "repo"
        self.work = root / "work"
        self.work.mkdir()
        self.repo.mkdir()
        for name in ("Snakefile", "rules", "workflow", "profiles", "src"):
            src = REPO / name
            if src.is_dir():
                shutil.copytree(src, self.repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
            else:
                shutil.copy2(src, self.repo / name)
        # WANDB_SERVICE: a wandb-core service of this test process (if some test started one).
        self.env = {k: v for k, v in os.environ.items() if k not in ("SNAKEMAKE_PROFILE", "WANDB_SERVICE")}
        self.env["MPLBACKEND"] = "Agg"
        self.env["PYTHONPATH"] = str(self.repo / "src")
        self.env["WANDB_MODE"] = "disabled"

    def run(self, config: dict, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        cfg = self.work / "config.yaml"
        cfg.write_text(yaml.safe_dump(config, sort_keys=False))
        cmd = [sys.executable, "-m", "snakemake", "-s", str(self.repo / "Snakefile"), "--directory", str(self.work),
               "--configfile", str(cfg), "--cores", "2", *args]
        env = {k: v for k, v in {**self.env, **(env or {})}.items() if v is not None}  # None: unset
        proc = subprocess.run(cmd, cwd=self.work, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (f"snakemake failed ({proc.returncode}):\n"
                                      f"{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
        return proc

    def planned(self, config: dict) -> list[tuple[str, dict]]:
        """(rule, wildcards) of the jobs a dry run plans."""
        proc = self.run(config, "-n")
        out = proc.stdout + proc.stderr
        if "Nothing to be done" in out:
            return []
        jobs = []
        for block in re.split(r"\n(?=(?:local)?rule \w+:)", out):
            m = re.match(r"(?:local)?rule (\w+):", block)
            if m:
                wc = re.search(r"^\s+wildcards: (.*)$", block, re.M)
                jobs.append((m.group(1), dict(kv.split("=", 1) for kv in wc.group(1).split(", ")) if wc else {}))
        return jobs

    @contextmanager
    def edited(self, relpath: str, edit):
        """Edit a file of the copy (``edit(text) -> text``) for the duration of the block."""
        path = self.repo / relpath
        text, st = path.read_text(), path.stat()
        path.write_text(edit(text))
        try:
            yield path
        finally:
            path.write_text(text)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def rules(jobs) -> list[str]:
    return sorted(r for r, _ in jobs)


def trained(jobs) -> list[tuple[str, str]]:
    return sorted((w["algorithm"], w["seed"]) for r, w in jobs if r == "train")


@pytest.fixture(scope="module")
def wf(tmp_path_factory):
    w = Workflow(tmp_path_factory.mktemp("reruns"))
    probe = subprocess.run([sys.executable, "-c", "import fedbench; print(fedbench.__file__)"], env=w.env,
                           capture_output=True, text=True, check=True)
    assert probe.stdout.strip().startswith(str(w.repo)), f"the copy's src/ is not imported first: {probe.stdout}"
    w.run(TINY)
    assert w.planned(TINY) == []
    return w


@pytest.mark.slow
def test_new_algorithm_adds_only_its_cells(wf):
    more = copy.deepcopy(TINY)
    more["experiments"]["tiny"]["algorithms"]["scaffold"] = {}
    jobs = wf.planned(more)
    assert trained(jobs) == [("scaffold", "0")]
    # no new dataset or partition
    assert rules(jobs) == ["aggregate", "all", "collect", "collect_folder", "compare", "scorecard", "train"]


@pytest.mark.slow
def test_editing_an_algorithm_module_reruns_only_its_cells(wf):
    # fedprox.py is used by the FedProx cells only.
    with wf.edited("src/fedbench/algorithms/fedprox.py", lambda s: s + "\n_CODE_EDIT = 1\n"):
        jobs = wf.planned(TINY)
    assert trained(jobs) == [("fedprox", "0")]
    assert rules(jobs) == ["aggregate", "all", "collect", "collect_folder", "compare", "scorecard", "train"]
    # FedProx imports fedavg.py: editing it reruns both algorithms' cells.
    with wf.edited("src/fedbench/algorithms/fedavg.py", lambda s: s + "\n_CODE_EDIT = 1\n"):
        assert trained(wf.planned(TINY)) == [("fedavg", "0"), ("fedprox", "0")]
    # A comment or a blank line changes no code version.
    with wf.edited("src/fedbench/algorithms/fedprox.py", lambda s: s + "\n\n# a comment\n"):
        assert wf.planned(TINY) == []
    # Back to the original source: nothing to do.
    assert wf.planned(TINY) == []


@pytest.mark.slow
def test_library_edits_rerun_exactly_the_jobs_that_use_the_code(wf):
    code_edit = lambda s: s + "\n_CODE_EDIT = 1\n"  # noqa: E731
    cells = [("fedavg", "0"), ("fedprox", "0")]
    # TINY's cells use the logreg model: editing the MLP reruns nothing, editing logreg both cells.
    with wf.edited("src/fedbench/models/mlp.py", code_edit):
        assert wf.planned(TINY) == []
    with wf.edited("src/fedbench/models/logreg.py", code_edit):
        jobs = wf.planned(TINY)
    assert trained(jobs) == cells
    assert rules(jobs) == ["aggregate", "all", "collect", "collect_folder", "compare", "scorecard", "train",
                           "train"]
    # The engine, and what it imports (the RNG), is in every cell's version.
    for path in ("src/fedbench/engine/clients/sampling.py", "src/fedbench/rng.py"):
        with wf.edited(path, code_edit):
            assert trained(wf.planned(TINY)) == cells, path
    # The digits reader re-prepares digits, and so its partition and cells; another reader nothing.
    with wf.edited("src/fedbench/data/digits.py", code_edit):
        assert rules(wf.planned(TINY)) == ["aggregate", "all", "collect", "collect_folder", "compare", "partition",
                                           "prepare_dataset", "scorecard", "train", "train"]
    with wf.edited("src/fedbench/data/idx.py", code_edit):
        assert wf.planned(TINY) == []
    # The partitioners rebuild the partition and rerun its cells.
    with wf.edited("src/fedbench/data/partition.py", code_edit):
        assert rules(wf.planned(TINY)) == ["aggregate", "all", "collect", "collect_folder", "compare", "partition",
                                           "scorecard", "train", "train"]
    # Comments and docstrings change no version.
    doc_edit = lambda s: s.replace('"""', '"""Edited docstring. ', 1) + "\n# a comment\n"  # noqa: E731
    with (wf.edited("src/fedbench/engine/rounds/loop.py", doc_edit),
          wf.edited("src/fedbench/models/logreg.py", doc_edit)):
        assert wf.planned(TINY) == []
    assert wf.planned(TINY) == []


@pytest.mark.slow
def test_table_formatting_reruns_only_aggregation(wf):
    fmt = copy.deepcopy(TINY)
    fmt["tables"] = {"decimals": 3}
    assert rules(wf.planned(fmt)) == ["aggregate", "all"]  # the comparison plot has no table formatting
    edit = lambda s: s.replace("Uplink floats: total", "Uplink floats, total")  # noqa: E731
    with wf.edited("src/fedbench/analysis/tables.py", edit):
        assert rules(wf.planned(TINY)) == ["aggregate", "all", "compare"]
    with wf.edited("workflow/scripts/aggregate.py", lambda s: s + "\n# edited\n"):  # the script's mtime
        assert rules(wf.planned(TINY)) == ["aggregate", "all"]
    assert wf.planned(TINY) == []


@pytest.mark.slow
def test_runtime_settings_rerun_nothing(wf):
    rt = copy.deepcopy(TINY)
    rt["experiments"]["tiny"]["resources"] = {"runtime": 90, "mem_mb": 4000, "cpus": 2, "gpus": 1}
    rt["wandb"] = {"enabled": False, "project": "elsewhere"}
    assert wf.planned(rt) == []
    # naming the paper an experiment feeds adds that paper's outputs and retrains nothing
    rt["experiments"]["tiny"]["paper"] = "elastic_aggregation"
    assert rules(wf.planned(rt)) == ["all", "paper_table", "scorecard"]  # the paper's claims join the scorecard


@pytest.mark.slow
def test_turning_wandb_on_logs_existing_cells_offline_without_retraining(wf):
    from fedbench.wandb_log import read_offline_run

    on = copy.deepcopy(TINY)
    on["wandb"] = {"enabled": True, "project": "fedbench-test", "mode": "offline"}
    on["experiments"]["tiny"]["paper"] = "elastic_aggregation"
    assert rules(wf.planned(on)) == ["all", "paper_table", "scorecard", "wandb_log", "wandb_log"]
    # A real W&B offline run: no WANDB_MODE override, no API key, no network.
    env = {"WANDB_MODE": None, "WANDB_API_KEY": None, "WANDB_SILENT": "true", "NETRC": str(wf.work / "no-netrc")}
    wf.run(on, env=env)
    metrics = {}
    for algo in ("fedavg", "fedprox"):
        rec = json.loads((wf.work / f"results/wandb/runs/tiny/digits/iid/{algo}/seed=0/wandb.json").read_text())
        assert rec["mode"] == "offline" and rec["project"] == "fedbench-test"
        run = read_offline_run(wf.work / rec["dir"])
        assert run["finished"]
        assert run["run"]["project"] == "fedbench-test"
        assert run["run"]["group"] == "tiny/digits/iid" and run["run"]["job_type"] == algo
        assert sorted(run["run"]["tags"]) == ["elastic_aggregation", "seed=0"]
        assert run["config"]["algorithm"] == algo and run["config"]["rounds"] == 2
        assert run["config"]["paper"] == "elastic_aggregation"
        summary = json.loads((wf.work / f"results/runs/tiny/digits/iid/{algo}/seed=0/summary.json").read_text())
        assert run["config"]["code_version"] == summary["code_version"]
        assert [h["round"] for h in run["history"]] == [1, 2]
        assert run["summary"]["final_test_accuracy"] == summary["final_test_accuracy"]
        metrics[algo] = [h["test_accuracy"] for h in run["history"]]
    assert metrics["fedavg"][-1] == json.loads(
        (wf.work / "results/runs/tiny/digits/iid/fedavg/seed=0/summary.json").read_text())["final_test_accuracy"]
    assert wf.planned(on) == []
    assert wf.planned(TINY) == []  # W&B off again: nothing to do either
