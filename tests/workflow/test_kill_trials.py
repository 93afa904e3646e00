"""Kill-and-resume trials of the real workflow (issue 15, "How it will be checked"): SIGKILL
Snakemake, or one of its training jobs, at a random time; rerun as a user would (``--unlock``
first when Snakemake's lock was left behind); then every cell's metrics.parquet (all columns but
``wall_seconds``), the collected metrics and every table must equal those of an uninterrupted
run, and nothing may be left behind: no training process outliving a killed Snakemake, no hidden
temporary (``.*.tmp*``), no cell lock, no checkpoint of a finished cell, no Snakemake lock.

The slow test runs two trials (one of each kind) on a tiny workflow. By hand, more trials on
small versions of the shipped suites (default, lr_sweep_quick, fedac_quick, fed_minimax_quick:
stacked sweeps, FedAc's compiled steps, heterogeneous local work, minimax)::

    python tests/workflow/test_kill_trials.py [TRIALS_PER_SUITE] [SUITE ...]

prints one line per trial and the counts (equal / not equal, anything left behind).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
WALL_CLOCK = ("wall_seconds",)


def _suite(base: str, edit) -> dict:
    cfg = yaml.safe_load((REPO / "config" / base).read_text())
    edit(cfg)
    cfg["checkpoint_every"] = 2
    cfg["device"] = "cpu"
    return cfg


def _default(cfg):
    e = cfg["experiments"]["baselines"]
    e.update(seeds=[0, 1], rounds=12)
    e["datasets"] = {"digits": e["datasets"]["digits"]}
    e["algorithms"] = {k: e["algorithms"][k] for k in ("fedavg", "scaffold", "feddyn")}
    del cfg["datasets"]["synthetic_1_1"]


def _lr_sweep(cfg):
    e = cfg["experiments"]["lr_sweep_quick"]
    e.update(seeds=[0, 1], rounds=12)
    e["sweep"]["grid"]["local.lr"] = [0.1, 1.0]
    e["algorithms"]["fedprox"]["sweep"]["grid"]["mu"] = [0.01, 0.1]


def _fedac(cfg):
    e = cfg["experiments"]["fedac_quick"]
    e.update(seeds=[0, 1], rounds=32, eval_every=8)
    e["sweep"]["grid"] = {"local.lr": [0.1, 1.0], "partition.num_clients": [4]}
    e["sweep"]["zip"] = {"local.steps": [1, 4], "rounds": [32, 8], "eval_every": [8, 2]}
    e["algorithms"] = {"fedac": e["algorithms"]["fedac"], "fedavg": {}}


def _fedac_sparse(cfg):
    """FedAc's protocol on a sparse a9a-like LIBSVM file (written by :func:`_write_a9a_like`): the
    compiled whole-rounds paths (lanes; K = 1 one point; K = 2 and 8 touched coordinates brought
    forward by powers of A, at K = 8 most coordinates; Mb-SGD one point at every K) and the
    evaluations of all cells in one pass."""
    _fedac(cfg)
    e = cfg["experiments"]["fedac_quick"]
    cfg["datasets"] = {"sparse": {"source": "libsvm_file", "path": "data/a9a_like.svm", "test_fraction": 0.2}}
    e["datasets"] = {"sparse": {"model": {"name": "binary_logreg"},
                                "partitions": {"shared": {"scheme": "shared", "num_clients": 512}}}}
    # 512 clients: large enough that each job takes the compiled paths (VectorizedClients._compiled_pays)
    e["sweep"]["grid"] = {"local.lr": [0.1, 0.3, 1.0], "partition.num_clients": [512]}
    e["sweep"]["zip"] = {"local.steps": [1, 2, 8], "rounds": [128, 64, 32], "eval_every": [16, 8, 4]}
    e["algorithms"] = {"fedac": {"variant": "I"}, "mb_sgd": {}}


def _write_a9a_like(workdir: Path, rows: int = 3000, d: int = 123, ones: int = 14) -> None:
    """``workdir/data/a9a_like.svm``: binary features, ``ones`` of ``d`` on per row (a9a's shape),
    ±1 labels from a planted logistic model."""
    rng = np.random.default_rng(0)
    w = rng.normal(size=d)
    cols = np.sort(np.argsort(rng.random((rows, d)), axis=1)[:, :ones], axis=1)
    y = np.where(rng.random(rows) < 1.0 / (1.0 + np.exp(-w[cols].sum(axis=1))), "+1", "-1")
    (workdir / "data").mkdir()
    (workdir / "data" / "a9a_like.svm").write_text(
        "".join(lab + " " + " ".join(f"{c + 1}:1" for c in row) + "\n" for lab, row in zip(y, cols)))


def _minimax(cfg):
    del cfg["experiments"]["fed_minimax_robust_quick"]
    e = cfg["experiments"]["fed_minimax_fair_quick"]
    e.update(seeds=[0, 1], rounds=10)
    e["algorithms"] = {k: e["algorithms"][k] for k in ("local_sgda", "fed_norm_sgda")}


def _tiny(cfg):
    _default(cfg)
    e = cfg["experiments"]["baselines"]
    e.update(seeds=[0], rounds=16)
    e["datasets"]["digits"]["partitions"] = {"iid": e["datasets"]["digits"]["partitions"]["iid"]}
    e["algorithms"] = {"fedavg": {}, "scaffold": {}}


SUITES = {
    "default": ("config.yaml", _default),
    "lr_sweep": ("experiments/lr_sweep_quick.yaml", _lr_sweep),
    "fedac": ("experiments/fedac_quick.yaml", _fedac),
    "fedac_sparse": ("experiments/fedac_quick.yaml", _fedac_sparse),
    "minimax": ("experiments/fed_minimax_quick.yaml", _minimax),
    "tiny": ("config.yaml", _tiny),
}


def snakemake(workdir: Path, *args: str) -> subprocess.Popen:
    """``snakemake`` on ``workdir/config.yaml``, run from ``workdir`` (the workflow profile's local
    defaults apply: keep-going, rerun-incomplete), output to ``workdir/snakemake.log``."""
    env = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    env["MPLBACKEND"] = "Agg"
    log = (workdir / "snakemake.log").open("a")
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--configfile", str(workdir / "config.yaml"), "--cores", "1", *args]
    return subprocess.Popen(cmd, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)


def _processes_in(workdir: Path) -> dict[int, str]:
    """pid -> command line of the live processes whose working directory is ``workdir``."""
    out = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if Path(os.readlink(p / "cwd")) == workdir:
                    state = (p / "stat").read_text().rsplit(")", 1)[1].split()[0]
                    if state not in ("Z", "X"):
                        out[int(p.name)] = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                pass
    return out


def _training_jobs(workdir: Path) -> list[int]:
    return [pid for pid, cmd in _processes_in(workdir).items() if "train.py" in cmd and "bash" not in cmd.split()[0]]


def fresh(workdir: Path, suite: str) -> None:
    workdir.mkdir(parents=True)
    base, edit = SUITES[suite]
    if edit is _fedac_sparse:
        _write_a9a_like(workdir)
    (workdir / "config.yaml").write_text(yaml.safe_dump(_suite(base, edit), sort_keys=False))


def complete(workdir: Path) -> list[str]:
    """Run the workflow to the end as a user would; the notes of what that took."""
    notes = []
    for _ in range(3):
        proc = snakemake(workdir)
        proc.wait(timeout=1800)
        if proc.returncode == 0:
            return notes
        log = (workdir / "snakemake.log").read_text()
        if "cannot be locked" in log[-3000:] or "LockException" in log[-3000:]:
            notes.append("--unlock needed")
            snakemake(workdir, "--unlock").wait(timeout=300)
            continue
        raise AssertionError(f"the rerun failed:\n{log[-4000:]}")
    raise AssertionError("the rerun did not complete")


def outputs(workdir: Path) -> dict[str, object]:
    """What must equal an uninterrupted run: each metrics.parquet (less wall-clock columns) and table."""
    out = {}
    results = workdir / "results"
    for path in sorted(results.rglob("metrics.parquet")):
        table = pq.read_table(path)
        out[str(path.relative_to(workdir))] = table.drop([c for c in WALL_CLOCK if c in table.column_names])
    for path in sorted((results / "tables").rglob("*")):
        if path.is_file():
            out[str(path.relative_to(workdir))] = path.read_bytes()
    return out


def left_behind(workdir: Path) -> list[str]:
    """Files a finished run must not leave: hidden temporaries, cell locks, checkpoints, Snakemake locks."""
    found = []
    for root in ("results", "resources"):
        for path in (workdir / root).rglob("*"):
            name = path.name
            if (name.startswith(".") and ".tmp" in name) or name.endswith(".lock") or name == "checkpoint.pt":
                found.append(str(path.relative_to(workdir)))
    locks = workdir / ".snakemake" / "locks"
    found += [str(p.relative_to(workdir)) for p in locks.glob("*")] if locks.is_dir() else []
    return found


#: Seconds from a training job's start to its kill (drawn uniformly). A tiny suite's job lasts a
#: few seconds on a fast machine (about 2 of them importing torch), so the kill may still miss it:
#: the test then repeats the trial (MAX_ATTEMPTS).
IN_JOB_DELAY = (0.3, 2.0)
MAX_ATTEMPTS = 4


def trial(reference: dict, workdir: Path, suite: str, victim: str, duration: float, rng: random.Random) -> dict:
    """One trial: run, SIGKILL ``victim`` at a random time (``snakemake``: the workflow at any time;
    ``snakemake-in-train``: the workflow while a training job runs; ``train``: a training job),
    rerun, compare."""
    fresh(workdir, suite)
    proc = snakemake(workdir)
    result = {"suite": suite, "victim": victim, "orphans": [], "notes": []}
    if victim in ("snakemake", "snakemake-in-train"):
        t0 = time.time()
        if victim == "snakemake":  # at a random time
            time.sleep(rng.uniform(0.1, 0.8) * duration)
        else:  # while a training job runs, a random time into it
            while proc.poll() is None and not _training_jobs(workdir):
                time.sleep(0.1)
            time.sleep(rng.uniform(*IN_JOB_DELAY))
        result["at"] = f"{time.time() - t0:.1f}s"
        jobs = _training_jobs(workdir)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.time() + 10  # a job polls its ancestors every second
        while time.time() < deadline and _processes_in(workdir):
            time.sleep(0.2)
        orphans = _processes_in(workdir)  # anything the killed Snakemake started: jobs, shells, executors
        result["orphans"] = [f"{pid} {cmd[:120]}" for pid, cmd in sorted(orphans.items())]
        for pid in orphans:  # end what the trial started and left behind
            os.kill(pid, signal.SIGKILL)
        result["killed_jobs"] = len(jobs)
    else:
        t0 = time.time()
        killed = None
        wait_for = rng.uniform(*IN_JOB_DELAY)
        while proc.poll() is None and killed is None:
            jobs = _training_jobs(workdir)
            if jobs and time.time() - t0 > 1:
                time.sleep(wait_for)
                jobs = [j for j in _training_jobs(workdir) if j in jobs]
                if jobs:
                    killed = rng.choice(jobs)
                    os.kill(killed, signal.SIGKILL)
            time.sleep(0.1)
        result["at"] = f"{time.time() - t0:.1f}s"
        result["killed_jobs"] = int(killed is not None)
        proc.wait(timeout=1800)
    result["notes"] = complete(workdir)
    got = outputs(workdir)
    result["differ"] = sorted(k for k in set(got) | set(reference)
                              if k not in got or k not in reference or not _equal(got[k], reference[k]))
    result["left"] = left_behind(workdir)
    return result


def _equal(a, b) -> bool:
    """Bytes equal, or tables bitwise equal (a float column compared by its bits: NaN, as in the
    test columns of a dataset without a test split, equals the same NaN; Arrow's equals says not)."""
    if isinstance(a, bytes):
        return a == b
    if a.schema != b.schema or a.num_rows != b.num_rows:
        return False
    for name in a.column_names:
        x, y = a.column(name).combine_chunks(), b.column(name).combine_chunks()
        if pa.types.is_floating(x.type):
            if not x.is_null().equals(y.is_null()):
                return False
            bits = np.dtype(f"u{x.type.bit_width // 8}")
            xv, yv = (pc.fill_null(v, 0).to_numpy(zero_copy_only=False).view(bits) for v in (x, y))
            if not np.array_equal(xv, yv):
                return False
        elif not x.equals(y):
            return False
    return True


def reference_run(workdir: Path, suite: str) -> tuple[dict, float]:
    fresh(workdir, suite)
    t = time.time()
    assert complete(workdir) == []
    return outputs(workdir), time.time() - t


@pytest.mark.slow
def test_killed_workflow_and_killed_job_resume_to_the_uninterrupted_results(tmp_path):
    reference, duration = reference_run(tmp_path / "ref", "tiny")
    assert any(k.endswith("metrics.parquet") for k in reference) and left_behind(tmp_path / "ref") == []
    rng = random.Random(0)
    for victim in ("snakemake-in-train", "train"):
        for attempt in range(MAX_ATTEMPTS):  # until the kill hits a running training job
            r = trial(reference, tmp_path / f"{victim}{attempt}", "tiny", victim, duration, rng)
            assert r["differ"] == [] and r["left"] == [] and r["orphans"] == [], r
            if r["killed_jobs"]:
                break
        else:
            pytest.fail(f"{victim}: no training job was running at the kill in {MAX_ATTEMPTS} trials: {r}")
    # the compiled whole-rounds paths (lanes, touched coordinates, one point, evaluations in one pass)
    reference, duration = reference_run(tmp_path / "sparse_ref", "fedac_sparse")
    for attempt in range(MAX_ATTEMPTS):
        r = trial(reference, tmp_path / f"sparse{attempt}", "fedac_sparse", "train", duration, rng)
        assert r["differ"] == [] and r["left"] == [] and r["orphans"] == [], r
        if r["killed_jobs"]:
            break
    else:
        pytest.fail(f"fedac_sparse: no training job was running at the kill in {MAX_ATTEMPTS} trials: {r}")


def main(per_suite: int, suites: list[str]) -> int:
    rng = random.Random(int(os.environ.get("SEED", "0")))
    root = Path(tempfile.mkdtemp(prefix="fedbench-kill-"))
    results = []
    for suite in suites:
        reference, duration = reference_run(root / suite / "ref", suite)
        print(f"{suite}: uninterrupted run {duration:.0f}s, {len(reference)} outputs compared", flush=True)
        for i in range(per_suite):
            victim = ("snakemake", "train", "snakemake-in-train")[i % 3]
            r = trial(reference, root / suite / f"trial{i}", suite, victim, duration, rng)
            results.append(r)
            print(f"  {suite} {victim:18s} at {r['at']:>6s} ({r['killed_jobs']} running jobs): "
                  f"{'EQUAL' if not r['differ'] else 'DIFFER ' + ', '.join(r['differ'][:5])}"
                  f"{'; orphans ' + str(r['orphans']) if r['orphans'] else ''}"
                  f"{'; left ' + ', '.join(r['left'][:5]) if r['left'] else ''}"
                  f"{'; ' + ', '.join(r['notes']) if r['notes'] else ''}", flush=True)
            shutil.rmtree(root / suite / f"trial{i}", ignore_errors=True)
    equal = sum(not r["differ"] for r in results)
    clean = sum(not r["left"] and not r["orphans"] for r in results)
    print(f"\n{len(results)} trials: {equal} equal, {len(results) - equal} not equal; {clean} left nothing behind")
    shutil.rmtree(root, ignore_errors=True)
    return 0 if equal == clean == len(results) else 1


if __name__ == "__main__":
    args = sys.argv[1:]
    n = int(args.pop(0)) if args and args[0].isdigit() else 4
    sys.exit(main(n, args or ["default", "lr_sweep", "fedac", "minimax"]))
