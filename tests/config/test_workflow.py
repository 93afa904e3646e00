"""fedbench.config.workflow: the bad-config battery (tests/config/battery.yaml): one-change mutations
of the shipped configs, each rejected before any job with a message naming its key path (and the fix,
where the entry gives a hint), or accepted where the config is valid.

- in-process, every entry, through :func:`fedbench.config.workflow_config` given exactly what
  Snakemake gives ``rules/common.smk`` (the config file as Snakemake loads it, ``--config`` values
  as Snakemake parses them): a few seconds for the whole battery;
- a few representative entries through a real ``snakemake -n`` (slow);
- every entry through a real ``snakemake -n --cores 1``, by hand (minutes):
  ``python tests/config/test_workflow.py --snakemake [ID ...]`` prints one line per entry and the
  counts: rejected before any job with the key path, accepted (valid), and the holes.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BATTERY = yaml.safe_load((Path(__file__).parent / "battery.yaml").read_text())
BY_ID = {e["id"]: e for e in BATTERY}


def mutated_file(entry: dict, directory: Path) -> Path:
    """The entry's config file (its base file under config/ with its one change), in ``directory``."""
    text = (REPO / "config" / entry["base"]).read_text()
    for old, new in entry.get("replace", []):
        assert text.count(old) == 1, f"{entry['id']}: {old!r} is not in {entry['base']} exactly once"
        text = text.replace(old, new)
    if "set" in entry or "delete" in entry:
        cfg = yaml.safe_load(text)
        for path, value in entry.get("set", {}).items():
            *parents, last = path.split("/")
            node = cfg
            for key in parents:
                node = node[key]
            node[last] = copy.deepcopy(value)
        for path in entry.get("delete", []):
            *parents, last = path.split("/")
            node = cfg
            for key in parents:
                node = node[key]
            del node[last]
        text = yaml.safe_dump(cfg, sort_keys=False)
    out = directory / f"{entry['id']}.yaml"
    out.write_text(text)
    return out


def parse_time_error(entry: dict, directory: Path) -> str | None:
    """The message the workflow stops with at parse time on the entry (None: accepted), from
    :func:`fedbench.config.workflow_config` given what Snakemake gives ``rules/common.smk``."""
    from snakemake.cli import parse_config
    from snakemake.common.configfile import load_configfile
    from snakemake.utils import update_config

    from fedbench.config import ConfigError, workflow_config

    path = mutated_file(entry, directory)
    overrides = parse_config(entry.get("config", []))
    config = load_configfile(str(path))  # as Snakemake loads it (a duplicate key: the last wins)
    update_config(config, overrides)
    try:
        workflow_config(config, [str(path)], overrides)
    except ConfigError as e:
        return str(e)
    return None


def test_the_battery_is_large_and_covers_every_schema_section():
    from fedbench.config import schema

    assert len(BATTERY) >= 90 and len(BY_ID) == len(BATTERY)
    changed = " ".join(" ".join([*e.get("set", {}), *e.get("delete", []), *e.get("config", [])]) for e in BATTERY)
    props = schema()["properties"]
    for key in [*props, *props["experiments"]["additionalProperties"]["properties"], "sweep/grid", "sweep/zip",
                "select/over", "lr_schedule", "replacement", "minimax", "local/epochs"]:
        assert key in changed, f"no battery entry changes {key!r}"
    assert any("replace" in e for e in BATTERY) and any("config" in e for e in BATTERY)


@pytest.mark.parametrize("entry", BATTERY, ids=[e["id"] for e in BATTERY])
def test_bad_config_is_rejected_at_parse_time_with_its_key_path(entry, tmp_path):
    error = parse_time_error(entry, tmp_path)
    if entry.get("valid"):
        assert error is None, f"a valid config is rejected: {error}"
        return
    assert error is not None, "accepted at parse time"
    assert entry["error"] in error, f"the message does not name {entry['error']!r}: {error}"
    assert entry.get("hint", "") in error, f"the message does not give the fix {entry['hint']!r}: {error}"


# --------------------------------------------------------------------------------------------
# Through a real `snakemake -n`


def run_snakemake(entry: dict, directory: Path, *args: str) -> subprocess.CompletedProcess:
    """``snakemake -n --cores 1`` on the entry's config file, run from ``directory``."""
    path = mutated_file(entry, directory)
    env = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(directory),
           "--configfile", str(path), "--cores", "1", "-n", *args]
    if entry.get("config"):
        cmd += ["--config", *entry["config"]]
    return subprocess.run(cmd, cwd=directory, env=env, capture_output=True, text=True, timeout=300)


def verdict(entry: dict, proc: subprocess.CompletedProcess) -> str:
    """'ok' when Snakemake did what the entry expects, else what went wrong."""
    out = proc.stdout + proc.stderr
    planned = "Building DAG of jobs" in out or "Job stats" in out
    if entry.get("valid"):
        return "ok" if proc.returncode == 0 else "valid but rejected: " + out.strip().splitlines()[-1][:300]
    if proc.returncode == 0:
        return "accepted"
    if planned:
        return "rejected only after planning jobs: " + out.strip().splitlines()[-1][:300]
    if entry["error"] not in out:
        return "rejected without the key path: " + out.strip()[-400:]
    if entry.get("hint", "") not in out:
        return "rejected without the fix hint"
    return "ok"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cli-wandb-nested", "cli-rounds-zero-nested", "duplicate-rounds", "seed-2-64",
                                  "rounds-string"])
def test_representative_entries_through_a_real_snakemake_dry_run(name, tmp_path):
    entry = BY_ID[name]
    proc = run_snakemake(entry, tmp_path)
    assert verdict(entry, proc) == "ok", proc.stdout[-2000:] + proc.stderr[-3000:]
    assert not (tmp_path / "results").exists()  # no job ran, none wrote anything


def _main(ids: list[str]) -> int:
    import tempfile
    import time

    entries = [BY_ID[i] for i in ids] if ids else BATTERY
    results = {}
    for entry in entries:
        with tempfile.TemporaryDirectory() as d:
            t = time.time()
            results[entry["id"]] = verdict(entry, run_snakemake(entry, Path(d)))
            print(f"{entry['id']:36s} {time.time() - t:5.1f}s  {results[entry['id']]}", flush=True)
    ok = [i for i, v in results.items() if v == "ok"]
    valid = [i for i in ok if BY_ID[i].get("valid")]
    print(f"\n{len(entries)} entries: {len(ok) - len(valid)} rejected before any job with the key path "
          f"(and hint), {len(valid)} valid and accepted, {len(entries) - len(ok)} holes:")
    for i, v in results.items():
        if v != "ok":
            print(f"  {i}: {v}")
    return 0 if len(ok) == len(entries) else 1


if __name__ == "__main__":
    if sys.argv[1:2] != ["--snakemake"]:
        sys.exit("usage: python tests/config/test_workflow.py --snakemake [ID ...]")
    sys.exit(_main(sys.argv[2:]))
