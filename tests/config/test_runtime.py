"""fedbench.config.runtime: the runtime-only blocks, checked and never part of a cell spec."""

from __future__ import annotations

import copy

import pytest
from configs import DEFAULT, REPO, rejects, tiny

from fedbench.config import check_config, expand_cells


def test_runtime_keys_are_checked_but_not_in_specs():
    cfg = tiny()
    cfg.update(engine="sequential", chunk_size=8, data={"mirror": "/srv/mirror"}, device="cpu")
    assert expand_cells(cfg) == expand_cells(tiny())
    cfg["chunk_size"] = "auto"
    check_config(cfg)
    for key, value, fragment in (("engine", "turbo", "vectorized, sequential"), ("chunk_size", 0, ">= 1"),
                                 ("data", {"mirrors": "x"}, "data.mirrors")):
        bad = tiny()
        bad[key] = value
        rejects(bad, key, fragment)


def test_train_resources_defaults_and_precedence():
    from fedbench.config import RESOURCE_DEFAULTS, train_resources

    cfg = tiny()
    assert train_resources(cfg) == {("e", "digits"): RESOURCE_DEFAULTS}
    cfg["experiments"]["e"]["resources"] = {"runtime": 120, "cpus": 4}
    cfg["experiments"]["e"]["datasets"]["digits"]["resources"] = {"gpus": 1, "mem_mb": 16000, "slurm_partition": "gpu"}
    res = train_resources(cfg)[("e", "digits")]
    assert res == {"runtime": 120, "mem_mb": 16000, "cpus": 4, "gpus": 1, "gres": None, "slurm_partition": "gpu"}
    assert expand_cells(cfg) == expand_cells(tiny())  # runtime only: never in a cell spec


@pytest.mark.parametrize("resources, fragment", [
    ({"cpus": 0}, "experiments.e.resources.cpus: must be >= 1"),
    ({"gpus": -1}, "experiments.e.resources.gpus: must be >= 0"),
    ({"runtime": 1.5}, "experiments.e.resources.runtime: must be an integer"),
    ({"gres": "gpu 1"}, "experiments.e.resources.gres: must look like"),
    ({"gpu": 1}, "experiments.e.resources.gpu: unknown key"),
])
def test_bad_resources(resources, fragment):
    cfg = tiny()
    cfg["experiments"]["e"]["resources"] = resources
    rejects(cfg, fragment)


def test_wandb_and_tables_blocks():
    from fedbench.config import table_settings, wandb_settings

    cfg = tiny()
    assert wandb_settings(cfg) == {"enabled": False, "project": "fedbench", "entity": None, "mode": "offline"}
    assert table_settings(cfg) == {"decimals": 2, "interval": "sd"}
    cfg.update(wandb={"enabled": True, "mode": "online", "entity": "lab"}, tables={"decimals": 1})
    cfg["experiments"]["e"]["paper"] = "fedelasticnet"
    check_config(cfg)
    assert wandb_settings(cfg)["project"] == "fedbench" and table_settings(cfg) == {"decimals": 1, "interval": "sd"}
    # the paper is carried by each cell for the paper outputs, and changes nothing else
    cells = expand_cells(cfg)
    assert [c.pop("paper") for c in cells] == ["fedelasticnet"] * len(cells)
    assert cells == [{k: v for k, v in c.items() if k != "paper"} for c in expand_cells(tiny())]
    for key, value, fragment in (("wandb", {"mode": "shared"}, "wandb.mode"),
                                 ("wandb", {"enable": True}, "wandb.enable"),
                                 ("tables", {"decimals": 9}, "tables.decimals: must be <= 6"),
                                 ("tables", {"interval": "ci90"}, "tables.interval: must be one of sd, ci95")):
        bad = tiny()
        bad[key] = value
        rejects(bad, fragment)
    bad = tiny()
    bad["experiments"]["e"]["paper"] = 3
    rejects(bad, "experiments.e.paper: must be a string")
    bad["experiments"]["e"]["paper"] = "FedElasticNet (Kim et al.)"  # a title, not a registry key
    rejects(bad, "experiments.e.paper: unknown paper 'FedElasticNet (Kim et al.)'; known papers: fedelasticnet, "
                 "elastic_aggregation")


def test_schema_accepts_the_runtime_blocks():
    from snakemake.utils import validate

    cfg = tiny()
    cfg.update(wandb={"enabled": True}, tables={"decimals": 3})
    cfg["experiments"]["e"]["resources"] = {"runtime": 10, "gpus": 1, "gres": "shard:1"}
    cfg["experiments"]["e"]["datasets"]["digits"]["resources"] = {"mem_mb": 500}
    cfg["experiments"]["e"]["paper"] = "p"
    validate(cfg, str(REPO / "workflow" / "schemas" / "config.schema.yaml"))
    assert cfg["wandb"] == {"enabled": True, "project": "fedbench", "entity": None, "mode": "offline"}
    assert cfg["experiments"]["e"]["datasets"]["digits"]["resources"] == {"mem_mb": 500}  # no defaults filled in


def test_job_resources_grow_with_the_attempt():
    from fedbench.config import RESOURCE_DEFAULTS, job_resources

    res = {**RESOURCE_DEFAULTS, "runtime": 45, "mem_mb": 3000, "cpus": 4, "gpus": 1, "gres": "shard:2"}
    assert job_resources(res) == {"runtime": 45, "mem_mb": 3000, "cpus_per_task": 4, "gpu": 1, "gres": "shard:2",
                                  "slurm_partition": None}
    third = job_resources(res, attempt=3)
    assert (third["runtime"], third["mem_mb"], third["cpus_per_task"], third["gpu"]) == (135, 9000, 4, 1)


def test_stack_is_runtime_only_and_checked():
    from fedbench.config import stacked_experiments

    cfg = tiny()
    assert stacked_experiments(cfg) == {}
    cfg["experiments"]["e"]["stack"] = True
    cfg["experiments"]["f"] = copy.deepcopy(tiny()["experiments"]["e"])
    assert stacked_experiments(cfg) == {"e": 1}
    assert [c for c in expand_cells(cfg) if c["experiment"] == "e"] == expand_cells(tiny())  # never in a spec
    assert all("stack" not in c for c in expand_cells(cfg))
    cfg["experiments"]["e"]["seeds"] = [3]
    assert stacked_experiments(cfg) == {"e": 1}  # one seed: its sweep's cells may still stack
    cfg["experiments"]["e"]["stack_groups_per_job"] = 8
    assert stacked_experiments(cfg) == {"e": 8}
    assert all("stack_groups_per_job" not in c for c in expand_cells(cfg))
    cfg["experiments"]["e"]["stack_groups_per_job"] = 0
    rejects(cfg, "experiments.e.stack_groups_per_job")
    cfg["experiments"]["f"]["stack_groups_per_job"] = 2  # f does not stack
    cfg["experiments"]["e"]["stack_groups_per_job"] = 1
    rejects(cfg, "experiments.f.stack_groups_per_job", "stack: false", "set stack: true")
    del cfg["experiments"]["f"]["stack_groups_per_job"]
    cfg["experiments"]["e"]["stack"] = "yes"
    rejects(cfg, "experiments.e.stack", "true or false", "'yes'")
    assert stacked_experiments(copy.deepcopy(DEFAULT)) == {"baselines": 1}
