"""Snakemake shim for rule train: fedbench.engine.loop.run_cell on one cell.

The device, engine, chunk_size and checkpoint_every come from the config at run time: they are not params,
since they change how a cell runs, not its result. stdout/stderr go to the job's log file,
through fedbench.runlog.ProgressLog, so the progress bar (rounds, latest accuracy) becomes one
line every few seconds instead of one ever-growing line. Where the job ran (host, Slurm job id)
is printed first and recorded as "job" in summary.json.
"""

import sys

_log = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

from fedbench.runlog import ProgressLog, job_context, slurm_cpus, update_json  # noqa: E402

sys.stdout = sys.stderr = ProgressLog(_log, interval=10.0)

from pathlib import Path  # noqa: E402

from fedbench.engine.loop import run_cell  # noqa: E402

out = snakemake.output  # noqa: F821
spec = dict(snakemake.params.spec)  # noqa: F821
job = job_context()
slurm = job["slurm"]
print(f"[fedbench] cell {spec['experiment']}/{spec['dataset']}/{spec['partition']}/{spec['algorithm']}/seed={spec['seed']}"
      f" on {job['host']}"
      + (f", Slurm job {slurm['job_id']} ({slurm['cpus_per_task']} CPUs)" if slurm else ", not in a Slurm job"))
try:
    run_cell(
        spec,
        Path(snakemake.input.meta).parent,  # noqa: F821
        snakemake.input.partition,  # noqa: F821
        out.metrics,
        out.summary,
        device=snakemake.config.get("device", "auto"),  # noqa: F821
        engine=snakemake.config.get("engine"),  # noqa: F821
        chunk_size=snakemake.config.get("chunk_size"),  # noqa: F821
        checkpoint_every=snakemake.config.get("checkpoint_every", 10),  # noqa: F821
        # rule train_delta_histogram (experiments with `delta_histogram`) declares a third output
        delta_histogram_path=getattr(out, "delta_histogram", None),
        # Inside Slurm, the CPUs the job was given (Snakemake caps threads by its own --cores).
        num_threads=slurm_cpus() or snakemake.threads,  # noqa: F821
        progress=True,
    )
    update_json(out.summary, {"job": job, "code_version": snakemake.params.code})  # noqa: F821
    print(f"[fedbench] wrote {out.metrics} and {out.summary}")
finally:
    sys.stdout.close()
    sys.stdout = sys.stderr = _log
