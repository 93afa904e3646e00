"""The cost estimate before launch, as a user sees it: a dry run of every shipped config file prints,
per experiment, its training jobs and their estimated time; a run that cannot finish in its runtime
is flagged with the key to set; an unset runtime asks the cluster for the estimate with a margin."""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_snakemake import TINY, ok, snakemake  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
# fedac.yaml (99,306 cells) takes minutes to plan; its experiments are priced like fedac_quick's.
SHIPPED = [REPO / "config/config.yaml",
           *sorted(p for p in REPO.glob("config/experiments/*.yaml") if p.stem != "fedac")]


@pytest.mark.slow
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_a_dry_run_of_a_shipped_config_prints_the_estimate(tmp_path, path):
    cfg = yaml.safe_load(path.read_text())
    proc = ok(snakemake(tmp_path, cfg, "-n"))
    lines = [line for line in proc.stderr.splitlines() if line.startswith("fedbench: estimate: ")]
    for experiment in cfg["experiments"]:
        mine = [line for line in lines if line.startswith(f"fedbench: estimate: {experiment}: ")]
        assert len(mine) == 1, (experiment, lines)
        assert re.search(r"\d+ training jobs to run \(of \d+\), ~[\d.]+ (s|min|h) of (CPU|GPU) time", mine[0])
    # the console's job blocks cut long file lists (profiles/default: logger fedbench); Snakemake's
    # own printed fedac_quick's 756 collected files on one line of ~100,000 characters
    longest = max((proc.stdout + proc.stderr).splitlines(), key=len)
    assert len(longest) < 2000, longest[:300]


@pytest.mark.slow
def test_a_run_that_cannot_finish_is_flagged_and_an_unset_runtime_follows_the_estimate(tmp_path):
    cfg = copy.deepcopy(TINY)
    e = cfg["experiments"]["tiny"]
    e.update(rounds=200_000, resources={"runtime": 30})
    e["local"]["epochs"] = 50
    e["datasets"]["digits"]["partitions"]["iid"]["num_clients"] = 100
    e["sampling"]["participation"] = 1.0
    proc = ok(snakemake(tmp_path, cfg, "-n"))
    assert "⚠ tiny: 2 of its jobs need more than their runtime (30 min" in proc.stderr
    assert "experiments.tiny.resources.runtime: " in proc.stderr
    asked = {int(r) for r in re.findall(r"runtime=(\d+)", proc.stdout)}
    assert asked == {30}  # the runtime set: a dry run shows what a cluster job asks for
    del e["resources"]
    proc = ok(snakemake(tmp_path, cfg, "-n"))
    asked = {int(r) for r in re.findall(r"runtime=(\d+)", proc.stdout)}
    assert len(asked) == 1 and asked.pop() > 30 * 10 and "⚠" not in proc.stderr
