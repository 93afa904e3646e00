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
from test_snakemake import TINY, check_estimate, ok, snakemake  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
# Every shipped config file's dry run prints the estimate (check_estimate). The dry runs that other
# tests make anyway check it there: config.yaml in test_snakemake.py (the README's one-liners);
# fedelasticnet{,_quick}, elastic_aggregation_quick, local_update{,_quick} and fed_minimax in
# test_paper_experiments.py. The rest here. fedac.yaml (99,306 cells) takes minutes to plan; its
# experiments are priced like fedac_quick's.
CHECKED_ELSEWHERE = {"config", "fedelasticnet", "fedelasticnet_quick", "elastic_aggregation_quick", "local_update",
                     "local_update_quick", "fed_minimax"}
SHIPPED = [REPO / "config/config.yaml", *sorted(REPO.glob("config/experiments/*.yaml"))]
HERE = [p for p in SHIPPED if p.stem not in CHECKED_ELSEWHERE | {"fedac"}]


def test_every_shipped_config_file_has_its_estimate_checked():
    """A config file added to config/experiments/ joins HERE unless a test of its own checks it."""
    assert {p.stem for p in SHIPPED} == {p.stem for p in HERE} | CHECKED_ELSEWHERE | {"fedac"}
    assert CHECKED_ELSEWHERE <= {p.stem for p in SHIPPED}


@pytest.mark.slow
@pytest.mark.parametrize("path", HERE, ids=lambda p: p.stem)
def test_a_dry_run_of_a_shipped_config_prints_the_estimate(tmp_path, path):
    cfg = yaml.safe_load(path.read_text())
    check_estimate(ok(snakemake(tmp_path, cfg, "-n")), cfg)


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
