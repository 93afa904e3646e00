"""The configs and assertions the config tests share (tests/config/conftest.py puts this folder on
sys.path): the default suite, a tiny valid config, and the check that a config is rejected."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fedbench.config import ConfigError, check_config

REPO = Path(__file__).resolve().parents[2]
DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
SPEC_KEYS = {
    "experiment", "dataset", "partition", "algorithm", "seed", "algorithm_name", "hparams", "model",
    "local", "sampling", "rounds", "eval_every", "target_accuracy", "paper", "scale", "dtype", "sweep",
    "dataset_dir", "partition_dir",  # where its inputs live (fedbench.layout)
}


def tiny() -> dict:
    """A small valid config: one experiment, digits iid with logreg, two algorithms, two seeds."""
    return {
        "datasets": {"digits": {"source": "digits"}},
        "experiments": {
            "e": {
                "seeds": [0, 1],
                "rounds": 3,
                "local": {"epochs": 1, "batch_size": 16, "lr": 0.05},
                "datasets": {"digits": {"model": {"name": "logreg"},
                                        "partitions": {"iid": {"scheme": "iid", "num_clients": 5}}}},
                "algorithms": {"fedavg": {}, "fedprox": {"mu": 0.1}},
            }
        },
    }


def rejects(config: dict, *fragments: str) -> str:
    """Assert ``config`` is rejected and the message contains every fragment; return the message."""
    with pytest.raises(ConfigError) as info:
        check_config(config)
    msg = str(info.value)
    for fragment in fragments:
        assert fragment in msg, f"{fragment!r} not in {msg!r}"
    return msg
