"""fedbench.config.structure: the schema's checks and defaults, command-line values typed as it says,
config files read refusing duplicate keys."""

from __future__ import annotations

import copy
import re

import pytest
from configs import DEFAULT, REPO, rejects, tiny

from fedbench.config import ConfigError, check_config


def test_default_config_passes_the_json_schema():
    from snakemake.utils import validate

    cfg = copy.deepcopy(DEFAULT)
    validate(cfg, str(REPO / "workflow" / "schemas" / "config.schema.yaml"))
    assert cfg["device"] == "auto" and cfg["dtype"] == "float32"


def test_schema_fills_defaults():
    from snakemake.utils import validate

    cfg = tiny()
    validate(cfg, str(REPO / "workflow" / "schemas" / "config.schema.yaml"))
    assert cfg["dtype"] == "float32"
    assert cfg["experiments"]["e"]["eval_every"] == 1
    assert cfg["experiments"]["e"]["target_accuracy"] is None
    assert cfg["data"] == {"mirror": None, "trust_mirror_checksums": False}
    assert cfg["engine"] is None and cfg["chunk_size"] is None
    check_config(cfg)


@pytest.mark.parametrize("p", [0, 1.5, -0.1])
def test_participation_outside_unit_interval(p):
    cfg = tiny()
    cfg["experiments"]["e"]["sampling"] = {"scheme": "uniform", "participation": p}
    rejects(cfg, "experiments.e.sampling.participation")


def test_participation_override_is_named_at_its_level():
    cfg = tiny()
    cfg["experiments"]["e"]["datasets"]["digits"]["sampling"] = {"participation": 2}
    rejects(cfg, "experiments.e.datasets.digits.sampling.participation", "<= 1")


def test_unknown_sampling_scheme():
    cfg = tiny()
    cfg["experiments"]["e"]["sampling"] = {"scheme": "poisson"}
    rejects(cfg, "experiments.e.sampling.scheme", "uniform, bernoulli")


def test_negative_lr():
    cfg = tiny()
    cfg["experiments"]["e"]["local"]["lr"] = -0.1
    rejects(cfg, "experiments.e.local.lr", "must be > 0 (got -0.1)")


def test_negative_lr_in_algorithm_override():
    cfg = tiny()
    cfg["experiments"]["e"]["algorithms"]["fedavg"]["local"] = {"lr": -1}
    rejects(cfg, "experiments.e.algorithms.fedavg.local.lr")


def test_zero_rounds():
    cfg = tiny()
    cfg["experiments"]["e"]["rounds"] = 0
    rejects(cfg, "experiments.e.rounds", "must be >= 1 (got 0)")


def test_zero_rounds_in_dataset_override():
    cfg = tiny()
    cfg["experiments"]["e"]["datasets"]["digits"]["rounds"] = 0
    rejects(cfg, "experiments.e.datasets.digits.rounds")


def test_rounds_wrong_type():
    cfg = tiny()
    cfg["experiments"]["e"]["rounds"] = 2.5
    rejects(cfg, "experiments.e.rounds", "integer")


def test_bad_ids_are_rejected():
    cfg = tiny()
    cfg["experiments"]["e"]["datasets"]["digits"]["partitions"]["a/b"] = {"scheme": "iid"}
    rejects(cfg, "partitions.a/b", "must match")


def test_unknown_keys_are_rejected():
    cfg = tiny()
    cfg["experiments"]["e"]["round"] = 3
    rejects(cfg, "experiments.e.round", "unknown key")
    cfg = tiny()
    cfg["experiments"]["e"]["local"]["learning_rate"] = 3
    rejects(cfg, "experiments.e.local.learning_rate", "unknown key")


def test_bad_device_and_dtype():
    cfg = tiny()
    cfg["device"] = "tpu"
    rejects(cfg, "device", "auto, cpu, cuda")
    cfg = tiny()
    cfg["dtype"] = "float16"
    rejects(cfg, "dtype", "float32, float64")


def test_seeds_must_be_distinct_non_negative_integers():
    for seeds, frag in (([], "non-empty"), ([0, 0], "distinct"), ([-1], "seeds[0]"), ([0.5], "integer")):
        cfg = tiny()
        cfg["experiments"]["e"]["seeds"] = seeds
        rejects(cfg, "experiments.e.seeds", frag)


def test_target_accuracy_range():
    cfg = tiny()
    cfg["experiments"]["e"]["target_accuracy"] = 90
    rejects(cfg, "experiments.e.target_accuracy", "<= 1")


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)
    assert re.match(r"^[A-Za-z]", rejects({"experiments": {}}, "experiments"))


def test_the_old_stack_seeds_key_names_its_replacement():
    cfg = tiny()
    cfg["experiments"]["e"]["stack_seeds"] = True
    msg = rejects(cfg, "experiments.e.stack_seeds: renamed to `stack`", "write `stack: true` instead")
    assert msg.startswith("experiments.e.stack_seeds:")


def test_schema_errors_name_the_key_path_and_what_is_allowed():
    cfg = tiny()
    cfg["foo"] = 1
    rejects(cfg, "foo: unknown key; allowed keys here:", "experiments")
    cfg = tiny()
    del cfg["experiments"]["e"]["rounds"]
    rejects(cfg, "experiments.e.rounds: missing")
    cfg = tiny()
    cfg["chunk_size"] = "big"
    rejects(cfg, "chunk_size: must be an integer >= 1, 'auto' or null (got 'big')")
    cfg = tiny()
    del cfg["datasets"]["digits"]["source"]
    rejects(cfg, "datasets.digits.source: missing", "digits, synthetic")
    assert check_config(validated_copy := copy.deepcopy(tiny())) is None and validated_copy == tiny()  # not modified


def test_nested_command_line_values_are_typed_as_the_schema_says():
    from fedbench.config import typed_overrides

    # what Snakemake hands over for --config wandb='{enabled: true, mode: offline}' (YAML BaseLoader)
    given = {"wandb": {"enabled": "true", "mode": "offline"}, "engine": "null", "chunk_size": "auto",
             "data": {"mirror": "/some/dir", "trust_mirror_checksums": "true"},
             "experiments": {"e": {"seeds": ["0", "1"], "rounds": "3", "target_accuracy": "0.5", "paper": "12",
                                   "local": {"lr": "0.1", "epochs": "1", "clip_norm": "null"},
                                   "delta_histogram": {"rounds": ["1", "last"]}}}}
    typed = typed_overrides(given)
    assert typed["wandb"] == {"enabled": True, "mode": "offline"}
    assert typed["data"] == {"mirror": "/some/dir", "trust_mirror_checksums": True}
    assert typed["engine"] is None and typed["chunk_size"] == "auto"
    e = typed["experiments"]["e"]
    assert e["seeds"] == [0, 1] and e["rounds"] == 3 and e["target_accuracy"] == 0.5
    assert e["paper"] == "12"  # the schema wants a string there: left alone
    assert e["local"] == {"lr": 0.1, "epochs": 1, "clip_norm": None}
    assert e["delta_histogram"] == {"rounds": [1, "last"]}
    assert given["wandb"]["enabled"] == "true"  # not modified
    # what does not parse to an allowed type is left for the schema to reject
    assert typed_overrides({"wandb": {"enabled": "yes please"}}) == {"wandb": {"enabled": "yes please"}}
    cfg = tiny()
    cfg["wandb"] = typed_overrides({"wandb": {"enabled": "maybe"}})["wandb"]
    rejects(cfg, "wandb.enabled: must be true or false (got 'maybe')")


def test_a_config_file_with_a_duplicate_key_is_rejected_with_file_line_and_key(tmp_path):
    from fedbench.config import load_yaml_strict

    path = tmp_path / "c.yaml"
    path.write_text("experiments:\n  e:\n    local:\n      lr: 0.1\n      batch_size: 8\n      lr: 0.2\n")
    with pytest.raises(ConfigError) as info:
        load_yaml_strict(path)
    assert f"{path}:6: key 'lr' given twice in one mapping (first at line 4)" in str(info.value)
    # the same key in different mappings, and a merge key overridden, are fine
    path.write_text("a: {lr: 1}\nb: {lr: 2}\nbase: &b {x: 1}\nm:\n  <<: *b\n  x: 2\n")
    assert load_yaml_strict(path)["m"] == {"x": 2}
    assert load_yaml_strict(REPO / "config" / "config.yaml") == DEFAULT


def test_seeds_must_fit_in_64_bit_signed_integers():
    cfg = tiny()
    cfg["experiments"]["e"]["seeds"] = [0, 2**64]
    rejects(cfg, "experiments.e.seeds[1]: must be < 9223372036854775808 (got 18446744073709551616)")
    cfg["experiments"]["e"]["seeds"] = [0, 2**63 - 1]
    check_config(cfg)
