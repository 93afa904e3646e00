"""`snakemake --lint` reports nothing but the one explained exception (Snakefile, docs/running.md):
no conda environment or container per rule, since the workflow's software is one pip-installed
Python package. rules/aggregate.smk is checked by its own tests."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXCEPTION = "Specify a conda environment or container for each rule."


@pytest.mark.slow
def test_lint_reports_only_the_explained_exception():
    env = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"}
    env["PYTHONPATH"] = str(REPO / "src")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert "Lints for" in out or "Congratulations" in out, out[-3000:]
    unexpected = []
    for block in re.split(r"\n(?=Lints for )", out):
        head = block.splitlines()[0]
        if not head.startswith("Lints for ") or "rules/aggregate.smk" in head:
            continue
        titles = re.findall(r"^    \* (.*?):?$", block, re.M)
        unexpected += [f"{head} {t}" for t in titles if t.rstrip(":") != EXCEPTION.rstrip(":")]
    assert not unexpected, "\n".join(unexpected)
