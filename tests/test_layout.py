"""fedbench.layout: prepared datasets and partitions are named by what they hold."""

from __future__ import annotations

import functools
import glob
from pathlib import Path

import pytest
import yaml

from fedbench import layout
from fedbench.config import datasets, partitions

REPO = Path(__file__).resolve().parents[1]
SHIPPED = [REPO / "config/config.yaml", *sorted(REPO.glob("config/experiments/*.yaml"))]


def test_digest_is_canonical_and_sensitive():
    a = {"source": "synthetic", "alpha": 1.0, "beta": 1.0, "max_samples_per_client": 400}
    assert layout.digest(a) == layout.digest(dict(reversed(list(a.items()))))  # key order does not matter
    assert layout.digest(a) != layout.digest({**a, "max_samples_per_client": None})
    assert len(layout.digest(a)) == layout.DIGEST_LENGTH and int(layout.digest(a), 16) >= 0
    assert layout.dataset_dir("synthetic_1_1", a) == f"resources/datasets/synthetic_1_1-{layout.digest(a)}"


def test_one_id_with_other_parameters_is_another_directory():
    d = {"source": "digits"}
    iid10, iid100 = {"scheme": "iid", "num_clients": 10}, {"scheme": "iid", "num_clients": 100}
    assert layout.partition_dir("digits", d, "iid", iid10, 0) != layout.partition_dir("digits", d, "iid", iid100, 0)
    assert layout.partition_dir("digits", d, "iid", iid10, 0).endswith(f"/iid-{layout.digest(iid10)}/seed=0")


@functools.cache
def _prepared(path: Path) -> dict[str, tuple[str, dict]]:
    cfg = yaml.safe_load(path.read_text())
    return {layout.dataset_dir(i, p): (i, p) for i, p in datasets(cfg).items()}


@functools.cache
def _partitioned(path: Path) -> dict[str, tuple]:
    cfg = yaml.safe_load(path.read_text())
    known, parts = datasets(cfg), partitions(cfg)
    return {layout.partition_dir(d, known[d], pid, p, 0): (d, pid, p) for (d, pid), p in parts.items()}


@pytest.mark.parametrize("a, b", [(a, b) for i, a in enumerate(SHIPPED) for b in SHIPPED[i + 1:]],
                         ids=lambda p: p.stem)
def test_shipped_config_files_do_not_clash(a, b):
    """Every pair of shipped config files: a directory both use holds the same data for both (the same
    resolved parameters), and no experiment name is used by both."""
    for mine, theirs in ((_prepared(a), _prepared(b)), (_partitioned(a), _partitioned(b))):
        for path in set(mine) & set(theirs):
            assert mine[path] == theirs[path], path
    assert not set(yaml.safe_load(a.read_text())["experiments"]) & set(yaml.safe_load(b.read_text())["experiments"])


def test_the_clash_that_motivated_it_gets_two_directories(tmp_path):
    """config/config.yaml's synthetic_1_1 caps the samples per client; a file whose synthetic_1_1 does
    not (as the Elastic Aggregation quick file's once did): two directories, so neither re-prepares the
    other's data."""
    default = {i: d for d, (i, _) in _prepared(REPO / "config/config.yaml").items()}
    other = yaml.safe_load((REPO / "config/config.yaml").read_text())
    del other["datasets"]["synthetic_1_1"]["max_samples_per_client"]
    (tmp_path / "uncapped.yaml").write_text(yaml.safe_dump(other))
    ea = {i: d for d, (i, _) in _prepared(tmp_path / "uncapped.yaml").items()}
    assert default["synthetic_1_1"] != ea["synthetic_1_1"]
    assert default["digits"] == ea["digits"]  # the same data: shared, prepared once
    assert glob.fnmatch.fnmatch(default["synthetic_1_1"], "resources/datasets/synthetic_1_1-*")
