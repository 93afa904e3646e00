"""Snakemake shim for rule train (one cell) and the stacked train rules of `stack: true`
experiments (groups of stackable cells, each in lockstep, one group after another: params.sizes),
both through fedbench.engine.rounds.loop.run_cells.
A stacked job records each cell's fingerprint (rules/common.smk, cell_fingerprint) in its
summary.json: that is how a later run knows the cell is done.

The device, engine, chunk_size and checkpoint_every come from the config at run time: they are not params,
since they change how a cell runs, not its result. stdout/stderr go to the job's log file,
through fedbench.runlog.ProgressLog, so the progress bar (rounds, latest accuracy) becomes one
line every few seconds instead of one ever-growing line. Where the job ran (host, Slurm job id)
is printed first and recorded as "job" in summary.json.

The job ends when the Snakemake that started it dies (fedbench.engine.rounds.lifetime.exit_with_parent),
and run_cells holds each cell's lock (fedbench.engine.rounds.lifetime.CellLock) while it trains, so a
second job on the same cell fails at once, naming the process that trains it.

A job's fixed cost (benchmarks/job_fixed_cost.py, benchmarks/RESULTS.md "Job fixed cost"): pandas
is never imported (fedbench.runlog.pyarrow_without_pandas), each summary.json is written once (the
job and code version go in with the fingerprint), the log's last line times the job (since its
process started; training = the cells' wall_seconds), and a finished job ends without the
interpreter's teardown (fedbench.runlog.end_process).
"""

import sys
import time

from fedbench.engine.rounds.lifetime import exit_with_parent

# End with Snakemake, even a SIGKILLed one: no orphan left training (and writing this cell's
# checkpoint) after the workflow is gone. Exits at once if the parent is already gone.
exit_with_parent()

_log = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

from fedbench.runlog import (  # noqa: E402
    ProgressLog,
    end_process,
    job_context,
    process_age,
    pyarrow_without_pandas,
    slurm_cpus,
)

# when the process started, on perf_counter's clock (where /proc cannot say: this script's start)
_started = time.perf_counter() - (process_age() or 0.0)
sys.stdout = sys.stderr = ProgressLog(_log, interval=10.0)
pyarrow_without_pandas()

from pathlib import Path  # noqa: E402

from fedbench.data.errors import DamagedFileError  # noqa: E402
from fedbench.engine.rounds.loop import run_cells  # noqa: E402
from fedbench.runlog import ends_with_message  # noqa: E402

out, params = snakemake.output, snakemake.params  # noqa: F821
stacked = hasattr(params, "specs")  # a stacked rule: one output of each kind per cell


def per_cell(files):
    return list(files) if stacked else [files]


specs = [dict(s) for s in params.specs] if stacked else [dict(params.spec)]
sizes = list(params.sizes) if stacked else [1]  # the job's groups, one run_cells each
codes = list(params.code) if stacked else [params.code]
job = job_context()
slurm = job["slurm"]
hist = getattr(out, "delta_histogram", None)  # rules for experiments with `delta_histogram` declare it
# a stacked job's inputs hold each partition file once; params.partitions has each cell's
partitions = per_cell(params.partitions if stacked else snakemake.input.partition)  # noqa: F821
metrics, summaries = per_cell(out.metrics), per_cell(out.summary)
hists = None if hist is None else per_cell(hist)
# what each summary.json records besides the cell's own summary (one write per file)
extras = [({"fingerprint": f} if stacked else {}) | {"job": job, "code_version": code}
          for f, code in zip(params.fingerprints if stacked else [None], codes)]
imported = time.perf_counter()  # Python, the imports and the job's arguments are in place
trained, training = 0.0, 0.0  # run_cells' time, and the cells' training (their wall_seconds)
try:
    with ends_with_message(DamagedFileError, what="training"):  # a damaged input: its message, no traceback
        lo = 0
        for i, size in enumerate(sizes):
            hi = lo + size
            names = [f"{s['experiment']}/{s['dataset']}/{s['partition']}/{s['algorithm']}/seed={s['seed']}"
                     for s in specs[lo:hi]]
            where = (f", Slurm job {slurm['job_id']} ({slurm['cpus_per_task']} CPUs)" if slurm
                     else ", not in a Slurm job")
            print(f"[fedbench] {'cells' if stacked else 'cell'} {', '.join(names)} on {job['host']}{where}"
                  + (f" (group {i + 1} of {len(sizes)} in this job)" if len(sizes) > 1 else ""))
            t0 = time.perf_counter()
            done = run_cells(
                specs[lo:hi],
                Path(snakemake.input.meta).parent,  # noqa: F821
                partitions[lo:hi],
                metrics[lo:hi],
                summaries[lo:hi],
                # runtime settings: the config's, with the schema's defaults (filled in by rules/common.smk)
                device=snakemake.config["device"],  # noqa: F821
                engine=snakemake.config["engine"],  # noqa: F821
                chunk_size=snakemake.config["chunk_size"],  # noqa: F821
                checkpoint_every=snakemake.config["checkpoint_every"],  # noqa: F821
                delta_histogram_paths=None if hists is None else hists[lo:hi],
                # Inside Slurm, the CPUs the job was given (Snakemake caps threads by its own --cores).
                num_threads=slurm_cpus() or snakemake.threads,  # noqa: F821
                progress=True,
                summary_extra=extras[lo:hi],
            )
            trained += time.perf_counter() - t0
            training += max(s["wall_seconds"] for s in done)
            for summary in summaries[lo:hi]:
                print(f"[fedbench] wrote {summary} and its metrics.parquet")
            lo = hi
    total = time.perf_counter() - _started
    print(f"[fedbench] job: {total:.2f} s since its process started: {imported - _started:.2f} s to start "
          f"(Python, Snakemake's arguments, imports), {trained:.2f} s in run_cells of which {training:.2f} s training "
          f"(wall_seconds); fixed cost {total - training:.2f} s")
finally:
    sys.stdout.close()
    sys.stdout = sys.stderr = _log
_log.close()
end_process(0)  # outputs written and closed: skip the interpreter's teardown
