# Config validation, the cell list, wildcard constraints and helpers. No rules here.
#
# fedbench.config checks the config before any job is scheduled: its structure against the JSON
# schema workflow/schemas/config.schema.yaml (whose defaults it fills in, once, here), then its
# meaning (registries, hyperparameters, cross-references). Errors name the offending key path.
# Before that: each config file is re-read refusing duplicate keys (Snakemake's YAML loader keeps
# the last), and nested `--config` values, which Snakemake hands over as strings, are typed as the
# schema says (fedbench.config.typed_overrides).
import os

from snakemake.exceptions import WorkflowError

from fedbench import layout
from fedbench.codeversion import code_version
from fedbench.config import (
    CELL_ID_PATTERN,
    ID_PATTERN,
    ConfigError,
    job_resources,
    training_spec,
    workflow_config,
)

# Only the `--config` values are typed (config_settings.config), not the `--configfile` contents
# that Snakemake also puts in config_settings.overwrite_config: a quoted "60" in a file stays a
# string, rejected as in config/config.yaml.
try:  # every check before any job (fedbench.config.workflow_config); fills the schema's defaults into config
    _parsed = workflow_config(config, workflow.configfiles, workflow.config_settings.config)
except ConfigError as e:
    raise WorkflowError(f"Invalid config: {e}") from None
CELLS = _parsed["cells"]
DATASETS = _parsed["datasets"]
PARTITIONS = _parsed["partitions"]
TRAIN_RESOURCES = _parsed["train_resources"]
WANDB = _parsed["wandb"]
TABLES = _parsed["tables"]
STACKED = _parsed["stacked"]  # {experiment: stacked groups per job} of the `stack: true` experiments

# One spec per cell, keyed by the wildcard values (strings) of its output path.
CELL_INDEX = {
    (c["experiment"], c["dataset"], c["partition"], c["algorithm"], str(c["seed"])): c for c in CELLS
}
EXPERIMENTS = list(dict.fromkeys(c["experiment"] for c in CELLS))

RUN_DIR = "results/runs/{experiment}/{dataset}/{partition}/{algorithm}/seed={seed}"
WANDB_RUN_DIR = "results/wandb/runs/{experiment}/{dataset}/{partition}/{algorithm}/seed={seed}"

# Prepared datasets and partitions live in directories named by what they hold (fedbench.layout):
# resources/datasets/{data}/ with data = <id>-<digest of its parameters>, and
# results/partitions/{data}/{part}/seed=<s>/ with part = <partition id>-<digest of its parameters>.
# Two config files that give one id different parameters never share a directory.
# {directory name: (dataset id, resolved dataset config)} of the config's datasets, and
# {(data, part): (dataset id, partition id, resolved partition config)} of its partitions.
PREPARED = {layout.dataset_key(d, p): (d, p) for d, p in DATASETS.items()}
PARTITIONED = {(layout.dataset_key(d, DATASETS[d]), layout.partition_key(pid, p)): (d, pid, p)
               for (d, pid), p in PARTITIONS.items()}
DATASET_DIR = os.path.join(layout.DATASETS_ROOT, "{data}")
PARTITION_DIR = os.path.join(layout.PARTITIONS_ROOT, "{data}", "{part}", "seed={seed}")


def verify_folder():
    """Before any job: every file of the folder that this config's jobs would read or skip
    (fedbench.integrity.verify_folder: its prepared datasets, partitions and cells; here also the
    collected metrics and F* files) checked cheaply for damage (truncated, missing beside its
    siblings, not its format), each damaged one named on stderr with what is wrong and what is
    done. A real run repairs them: a dataset or partition file re-made and checked against its
    recorded sha256 (nothing downstream reruns), a cell's outputs set aside (<name>.damaged) so that
    it retrains, a damaged checkpoint set aside (the cell trains from its start), a collected file
    set aside so that it is collected again. A dry run, a cluster job's own parse, or a folder that
    another Snakemake holds locked changes nothing and says what the next run will do. What cannot
    be repaired stops the workflow before any job, naming each file and the fix."""
    from fedbench.data.errors import DamagedFileError
    from fedbench.filecheck import CELL_OUTPUTS, json_problem, parquet_problem, set_aside
    from fedbench.integrity import verify_folder as verify

    if not workflow.is_main_process:
        return
    locked = any(Path(".snakemake/locks").glob("*.lock"))
    repair = not workflow.output_settings.dryrun and not locked
    data = config.get("data") or {}
    datasets = {Path(c["dataset_dir"]): PREPARED[Path(c["dataset_dir"]).name] for c in CELLS}
    partitions = {Path(c["partition_dir"]): (Path(c["dataset_dir"]), PARTITIONS[(c["dataset"], c["partition"])],
                                             int(c["seed"])) for c in CELLS}
    cells = list(dict.fromkeys(run_dir(c) for c in CELLS))
    try:
        lines = verify(datasets, partitions, cells, mirror=data.get("mirror"),
                       trust_mirror_checksums=bool(data.get("trust_mirror_checksums")), repair=repair)
    except DamagedFileError as e:
        raise WorkflowError(f"damaged files in the results folder:\n{e}") from None
    # Collected files and F*, checked as cheaply (Parquet's PAR1 ends, JSON that parses).
    folder = Path(layout.EXPERIMENT_METRICS).parent
    optima = {OPTIMUM_PATH.format(data=d, lam=lam): d for d, lam in OPTIMA}
    stale = set()  # experiments whose collected file must be made again in this run
    files = [(p, parquet_problem) for p in [*sorted(folder.glob("[!.]*.parquet")), Path(layout.FOLDER_METRICS)]]
    files += [(Path(p), json_problem) for p in optima]
    for path, problem in [(p, check(p)) for p, check in files if p.exists()]:  # a missing one is made as usual
        if problem is None:
            continue
        if not repair:
            lines.append(f"{path}: {problem}; the next run sets it aside and makes it again")
            continue
        set_aside(path)
        other = path.parent == folder and path.stem not in EXPERIMENTS
        again = (f"rerun the config file of experiment {path.stem!r} to collect it again" if other
                 else "this run makes it again")
        lines.append(f"{path}: {problem}; set aside as {path.name}.damaged: {again}")
        if str(path) in optima:  # the experiments whose suboptimality it gives
            stale |= {c["experiment"] for c in CELLS if (k := optimum_key(c)) and k[0] == optima[str(path)]}
        elif path.parent == folder and not other:
            stale.add(path.stem)
    # A cell whose outputs were set aside retrains, and a file set aside above is made again, only
    # if a target of this run is missing: Snakemake does not remake a missing intermediate file
    # under up-to-date targets. So its experiment's collected file and the folder's go too (this
    # run collects them again).
    experiment_of = {run_dir(c): c["experiment"] for c in CELLS}
    if repair:
        for line in list(lines):
            path = Path(line.split(": ", 1)[0])
            if path.name in CELL_OUTPUTS and str(path.parent) in experiment_of:
                stale.add(experiment_of[str(path.parent)])
    targets = [Path(layout.experiment_metrics(e)) for e in sorted(stale)] + [Path(layout.FOLDER_METRICS)] * bool(stale)
    for collected in targets:
        if collected.exists():
            collected.unlink()
            lines.append(f"{collected}: removed (made from what was set aside); this run makes it again")
    for line in lines:
        print(f"fedbench: damaged: {line}", file=sys.stderr)
    if lines and not repair:
        why = "another Snakemake holds this folder" if locked else "a dry run changes nothing"
        print(f"fedbench: nothing repaired ({why})", file=sys.stderr)
    # Directories of the layout before datasets and partitions were named by their parameters
    # (resources/datasets/<id>/, results/partitions/<id>/): no rule reads them any more; said, not deleted.
    named = re.compile(rf".+-{layout.DIGEST_PATTERN}")
    for root in (layout.DATASETS_ROOT, layout.PARTITIONS_ROOT):
        old = sorted(p.name for p in Path(root).glob("[!._]*") if p.is_dir() and not named.fullmatch(p.name))
        if old:
            print(f"fedbench: {root}/ holds {', '.join(old)} in the layout before directories were named by "
                  f"their parameters (<id>-<digest>): nothing reads them now; delete them when you no longer "
                  f"need them (rm -r {' '.join(f'{root}/{d}' for d in old)})", file=sys.stderr)


# A swept cell's algorithm label (and, for an axis on a partition parameter, its partition id) is
# the configured id plus one ",<name>=<value>" per axis: CELL_ID_PATTERN (fedbench.config.expand_cells).


wildcard_constraints:
    experiment=ID_PATTERN,
    dataset=ID_PATTERN,
    data=rf"{ID_PATTERN}-{layout.DIGEST_PATTERN}",
    part=rf"{CELL_ID_PATTERN}-{layout.DIGEST_PATTERN}",
    partition=CELL_ID_PATTERN,
    algorithm=CELL_ID_PATTERN,
    seed=r"\d+",


# Input, params and resource functions of the rules.
import functools
import hashlib
import json
import os
import re
import sys
from pathlib import Path
from types import SimpleNamespace

from fedbench.codeversion import dataset_version, partition_version, train_version
from fedbench.engine.rounds.stacking import stack_key

# A code version reads the source files it covers: once per argument per Snakemake start (the
# params of every train, prepare and partition job, and every stacked cell's fingerprint, ask again).
train_version, dataset_version, partition_version = map(functools.cache, (train_version, dataset_version,
                                                                           partition_version))


def dataset_params(wildcards):
    """The resolved dataset config ({source, **params}) of a prepared dataset's directory name."""
    try:
        return PREPARED[wildcards.data][1]
    except KeyError:
        raise WorkflowError(f"{layout.DATASETS_ROOT}/{wildcards.data}: no dataset of the config has these "
                            f"parameters (defined under `datasets:`: {', '.join(PREPARED) or 'none'})")


def dataset_id(wildcards):
    """The config's id of a prepared dataset's directory name."""
    return PREPARED[wildcards.data][0]


def partition_params(wildcards):
    """The resolved partition config ({scheme, **params}) of a partition's directory names."""
    try:
        return PARTITIONED[(wildcards.data, wildcards.part)][2]
    except KeyError:
        raise WorkflowError(f"{layout.PARTITIONS_ROOT}/{wildcards.data}/{wildcards.part}: no partition of the "
                            f"config's experiments has these parameters")


def cell_inputs(wildcards):
    """The prepared dataset's meta.json and the partition of one cell (rule train)."""
    cell = cell_of(wildcards)
    return {"meta": f"{cell['dataset_dir']}/meta.json", "partition": f"{cell['partition_dir']}/partition.parquet"}


def cell_of(wildcards):
    """The resolved cell (fedbench.config.expand_cells) of a run directory's wildcards."""
    key = (wildcards.experiment, wildcards.dataset, wildcards.partition, wildcards.algorithm, wildcards.seed)
    try:
        return CELL_INDEX[key]
    except KeyError:
        raise WorkflowError(f"no cell {'/'.join(key)} in the config")


def cell_spec(wildcards):
    """The training spec of one cell (fedbench.config.training_spec): everything that changes its
    result, nothing else (not the target accuracy or paper: changing them re-aggregates only)."""
    return training_spec(cell_of(wildcards))


def cell_code_version(wildcards):
    """The code version of everything the cell's result depends on (fedbench.codeversion.
    train_version): the engine, the cell's algorithm and model, and what they import. Editing
    the MLP reruns the MLP cells, the engine every cell; a comment or docstring reruns nothing."""
    spec = cell_spec(wildcards)
    return train_version(spec["algorithm_name"], spec["model"]["name"])


def dataset_local_files(wildcards):
    """The local files the dataset reads (fedbench.data.registry.local_files: libsvm_file's path
    and test_path), inputs of prepare_dataset so that a changed file re-prepares it; [] else."""
    from fedbench.data.registry import local_files

    return local_files(dataset_params(wildcards))


def dataset_code_version(wildcards):
    """The code version of the dataset's reader or generator (fedbench.codeversion.dataset_version)."""
    return dataset_version(dataset_params(wildcards)["source"])


def partition_code_version(wildcards):
    """The code version of the partitioners (fedbench.codeversion.partition_version)."""
    return partition_version()


def aggregate_code_version(wildcards):
    """The code version of the table and plot modules: editing them re-aggregates only."""
    return code_version(["fedbench.analysis.tables", "fedbench.analysis.plots"], within="fedbench.analysis")


#: Train resources that only a cluster scheduler reads (Slurm's --time, --cpus-per-task, --gres,
#: --partition). The local executor ignores them, so a local run does not declare them and its
#: job blocks do not print them; mem_mb and gpu stay (they are local limits under --resources).
#: Dry runs and cluster runs keep them: a dry run shows what a cluster job would ask for.
SCHEDULER_RESOURCES = ("runtime", "cpus_per_task", "gres", "slurm_partition")


def _local_executor():
    """Whether the jobs run on Snakemake's local executor (set before the DAG is built; None
    while the Snakefile is parsed, when no resource is evaluated)."""
    plugin = workflow.executor_plugin
    return plugin is not None and plugin.name == "local"


def _train_resource(key, cell=None, groups=1, job=None):
    """A resource function of a train rule: fedbench.config.job_resources of the config's
    resources for the cell's (experiment, dataset), at this attempt (runtime and mem_mb grow
    with it, so a retry after a time-out or out-of-memory kill asks for more). The cell is the
    one the wildcards name, or ``cell`` for a stacked job named ``job`` (its first cell; all share
    the resources), whose configured runtime is that of its ``groups`` groups one after another.
    An unset runtime is the job's estimated time with a margin (JOB_SECONDS, fedbench.estimate)."""

    def get(wildcards, attempt):
        if key in SCHEDULER_RESOURCES and _local_executor():
            return None  # Snakemake drops a None resource: not shown, not requested
        where = (cell["experiment"], cell["dataset"]) if cell else (wildcards.experiment, wildcards.dataset)
        resources = TRAIN_RESOURCES[where]
        seconds = JOB_SECONDS.get(job if cell else cell_key(wildcards))
        value = job_resources(resources, attempt, seconds)[key]
        configured = resources["runtime"] is not None
        return value * groups if key == "runtime" and configured and value is not None else value

    get.__name__ = f"train_{key}"
    return get


def train_rule_resources(cell=None, groups=1, job=None):
    """The resources of the train rule, or with ``cell`` those of the stacked job ``job`` of
    ``groups`` groups, for that cell's experiment and dataset. gpu/gres/slurm_partition are only
    declared when some experiment sets them, so that otherwise the profile's defaults apply to them
    untouched (a declared resource whose value is None is dropped by Snakemake)."""
    res = {key: _train_resource(key, cell, groups, job) for key in ("runtime", "mem_mb", "cpus_per_task")}
    values = list(TRAIN_RESOURCES.values())
    if any(r["gpus"] for r in values):
        res["gpu"] = _train_resource("gpu", cell)  # Slurm: --gpus=N (none when 0); locally: --resources gpu=N
    for key in ("gres", "slurm_partition"):
        if any(r[key] is not None for r in values):
            res[key] = _train_resource(key, cell)
    return res


def cell_key(cell):
    """(experiment, dataset, partition, algorithm, seed as a string) of a cell or its wildcards."""
    get = cell.get if isinstance(cell, dict) else lambda k: getattr(cell, k)
    return tuple(str(get(k)) for k in ("experiment", "dataset", "partition", "algorithm", "seed"))


def train_threads(wildcards):
    """Threads of a train job: the config's cpus (locally capped by --cores)."""
    return TRAIN_RESOURCES[(wildcards.experiment, wildcards.dataset)]["cpus"]


def cell_paths(filename, experiment=None, root=RUN_DIR):
    """The paths of ``filename`` (e.g. metrics.parquet) of every cell, in config order."""
    return [
        f"{root}/{filename}".format(**{k: c[k] for k in ("experiment", "dataset", "partition", "algorithm", "seed")})
        for c in CELLS
        if experiment is None or c["experiment"] == experiment
    ]


def optimum_key(cell):
    """(prepared dataset's directory name, λ as written in the path) of a cell whose suboptimality
    needs F* (model ``binary_logreg``, λ = local.weight_decay > 0: rule optimum), else None."""
    lam = cell["local"].get("weight_decay") or 0.0
    if cell["model"]["name"] != "binary_logreg" or not lam > 0:
        return None
    return (cell["dataset_dir"].rsplit("/", 1)[1], repr(float(lam)))


# (data, λ) -> the first cell that needs its F* (its experiment's resources serve the job).
OPTIMA = {}
for _cell in CELLS:
    if (_key := optimum_key(_cell)) is not None:
        OPTIMA.setdefault(_key, _cell)
OPTIMUM_PATH = "results/optimum/{data}/l2={lam}.json"


def optimum_paths(wildcards):
    """The F* files that one experiment's cells need (inputs of its rule collect)."""
    return list(dict.fromkeys(OPTIMUM_PATH.format(data=key[0], lam=key[1]) for c in CELLS
                              if c["experiment"] == wildcards.experiment and (key := optimum_key(c)) is not None))


def cell_optima(wildcards):
    """[(experiment, dataset, partition, algorithm, seed), F* file] of one experiment's cells with one."""
    return [[[c[k] for k in ("experiment", "dataset", "partition", "algorithm", "seed")],
             OPTIMUM_PATH.format(data=key[0], lam=key[1])]
            for c in CELLS if c["experiment"] == wildcards.experiment and (key := optimum_key(c)) is not None]


def experiment_cell_metrics(wildcards):
    """The metrics.parquet of every cell of one experiment, in config order (inputs of its rule collect)."""
    return cell_paths("metrics.parquet", experiment=wildcards.experiment)


def experiment_metrics(experiments):
    """results/metrics/<experiment>.parquet of each of ``experiments`` (fedbench.layout)."""
    return [layout.experiment_metrics(e) for e in dict.fromkeys(experiments)]


def folder_metrics(wildcards=None):
    """Every experiment's collected metrics in the folder: the current config's (made by rule
    collect) and those that earlier config files collected here (results/metrics/*.parquet,
    left as they are). Inputs of the cross-experiment metrics and comparison plot."""
    present = [p.stem for p in Path(layout.EXPERIMENT_METRICS).parent.glob("*.parquet")
               if not p.name.startswith(".")]  # not a temporary file of a write in progress
    return experiment_metrics(sorted(set(EXPERIMENTS + present)))  # one order whichever config runs


def optimum_resource(key):
    """A resource function of the optimum rule, the resources of the first cell's (experiment,
    dataset) that needs this F*, as its train job's (fedbench.config.job_resources)."""

    def get(wildcards, attempt):
        cell = OPTIMA[(wildcards.data, wildcards.lam)]
        return job_resources(TRAIN_RESOURCES[(cell["experiment"], cell["dataset"])], attempt)[key]

    get.__name__ = f"optimum_{key}"
    return get


def experiment_targets(wildcards):
    """{dataset id: target test accuracy or None} of one experiment (a dataset may override it)."""
    return {c["dataset"]: c["target_accuracy"] for c in CELLS if c["experiment"] == wildcards.experiment}


def wandb_enabled(wildcards=None):
    """Input function of the W&B rules: no inputs, but a clear error when W&B is off."""
    if not WANDB["enabled"]:
        raise WorkflowError(
            "W&B is off in the config: set `wandb: {enabled: true}` in the config file to log, "
            "sync or report W&B runs (README.md, \"Weights & Biases\")"
        )
    return []


def wandb_records(wildcards=None):
    """The per-cell W&B records of the current config (the outputs of wandb_log)."""
    return cell_paths("wandb.json", root=WANDB_RUN_DIR)


def wandb_report_cells(wildcards=None):
    """What the W&B report shows of the cells: one (experiment, dataset, partition, paper) each."""
    keys = ("experiment", "dataset", "partition", "paper")
    return [dict(zip(keys, row)) for row in dict.fromkeys(tuple(c.get(k) for k in keys) for c in CELLS)]


def wandb_paper(wildcards):
    """The paper of a cell (a W&B tag), from the resolved cell, not the raw config."""
    return cell_of(wildcards)["paper"]


# Training rules (rules/train.smk) ----------------------------------------------------------


def one_of(names):
    """A wildcard regex matching exactly ``names`` (none: a regex that matches nothing)."""
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


UNSTACKED_EXPERIMENTS = one_of([e for e in EXPERIMENTS if e not in STACKED]) if STACKED else ID_PATTERN
# Experiments with `delta_histogram` (rules/train.smk).
HISTOGRAM_EXPERIMENTS = list(dict.fromkeys(c["experiment"] for c in CELLS if c.get("delta_histogram")))


def cell_fingerprint(cell):
    """A digest of everything a cell's result depends on: its training spec, the code version of
    the engine, algorithm and model (train_version), and its dataset's and partition's parameters
    and code versions. Recorded in summary.json by the stacked train rules (run_cells'
    summary_extra): a cell of a `stack: true` experiment is done when its recorded fingerprint
    equals this one (stacked_cell_done)."""
    spec = training_spec(cell)
    dataset = DATASETS[cell["dataset"]]
    record = {
        "spec": spec,
        "code": train_version(spec["algorithm_name"], spec["model"]["name"]),
        "dataset": dataset,
        "dataset_code": dataset_version(dataset["source"]),
        "partition": PARTITIONS[(cell["dataset"], cell["partition"])],
        "partition_code": partition_version(),
    }
    return hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()[:16]


def run_dir(cell):
    return RUN_DIR.format(**{k: cell[k] for k in ("experiment", "dataset", "partition", "algorithm", "seed")})


def stacked_cell_done(cell, fingerprint):
    """Whether a cell of a `stack: true` experiment has its outputs, made from what the config
    and the code say now: its summary.json records ``fingerprint`` and its other outputs exist."""
    d = run_dir(cell)
    try:
        with open(f"{d}/summary.json") as f:
            recorded = json.load(f).get("fingerprint")
    except (OSError, ValueError):
        return False
    outputs = ["metrics.parquet"] + (["delta_histogram.parquet"] if cell.get("delta_histogram") else [])
    return recorded == fingerprint and all(os.path.exists(f"{d}/{o}") for o in outputs)


def stack_groups():
    """The train jobs of the `stack: true` experiments: the cells still to train, grouped by
    fedbench.engine.rounds.stacking.stack_key (cells that differ only in their seed and continuous
    hyperparameters: one group each, trained in lockstep), in config order, and up to the
    experiment's stack_groups_per_job consecutive groups of the same dataset in one job (one after
    another, one process).

    Cells that are done (stacked_cell_done) are in no group and have no rule: Snakemake reads their
    outputs as existing files. So adding a grid value or a seed trains only the new cells (one job
    for them), and a changed hyperparameter retrains only the cells whose fingerprint changed;
    regrouping never retrains a finished cell. Each job is a rule of its own
    (rules/train.smk), named train_<experiment>_<dataset>_<partition>_<algorithm label>_<digest of
    its members>, so a cluster job that parses the Snakefile again finds the same rule (its
    members are still not done while it runs). ``sizes`` are the job's groups' cell counts, in
    the order of ``cells``."""
    groups = {}
    for cell in CELLS:
        if cell["experiment"] not in STACKED:
            continue
        fingerprint = cell_fingerprint(cell)
        if stacked_cell_done(cell, fingerprint):
            continue
        key = (cell["experiment"], stack_key(training_spec(cell)))
        groups.setdefault(key, []).append((cell, fingerprint))
    jobs = []  # lists of groups: consecutive groups of one experiment and dataset, up to its groups per job
    for (experiment, _), members in groups.items():
        last = jobs[-1][-1][0][0] if jobs else None
        if (last is not None and (last["experiment"], last["dataset"]) == (experiment, members[0][0]["dataset"])
                and len(jobs[-1]) < STACKED[experiment]):
            jobs[-1].append(members)
        else:
            jobs.append([members])
    out = []
    for job in jobs:
        members = [m for group in job for m in group]
        names = [run_dir(c) for c, _ in members]
        digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:10]
        first = members[0][0]
        label = first["sweep"]["label"] if first.get("sweep") else first["algorithm"]
        more = f"_and_{len(job) - 1}_more" if len(job) > 1 else ""
        readable = re.sub(r"\W", "_", f"{first['experiment']}_{first['dataset']}_{first['partition']}_{label}{more}")
        out.append(SimpleNamespace(
            name=f"train_{readable}_{digest[:6]}",
            cells=[c for c, _ in members],
            partitions=[f"{c['partition_dir']}/partition.parquet" for c, _ in members],  # per cell
            fingerprints=[f for _, f in members],
            sizes=[len(group) for group in job],
            log="results/logs/train/{experiment}/{dataset}/{partition}/stack-{digest}.log".format(
                digest=digest, **first),
        ))
    return out


def stack_outputs(group):
    """The outputs of a stacked train job: per kind, one path per member cell, in member order."""
    outputs = {
        "metrics": [f"{run_dir(c)}/metrics.parquet" for c in group.cells],
        "summary": [f"{run_dir(c)}/summary.json" for c in group.cells],
    }
    if group.cells[0].get("delta_histogram"):
        outputs["delta_histogram"] = [f"{run_dir(c)}/delta_histogram.parquet" for c in group.cells]
    return outputs


# Console (Snakefile onsuccess) -------------------------------------------------------------


#: Rows of each table printed at the end of a run (the files hold them all).
CONSOLE_ROWS = 40


def print_results(wandb_enabled):
    """After a successful run, on stderr (where Snakemake's own messages go): each experiment's
    table (results/tables/<experiment>.md) or, for a sweep, its selection table
    (results/tables/sweeps/<experiment>.md), each cut to its first CONSOLE_ROWS rows, and where
    the rest is."""
    from fedbench.analysis.tables import head_rows

    for experiment in EXPERIMENTS:
        table, selection = f"results/tables/{experiment}.md", f"results/tables/sweeps/{experiment}.md"
        path = selection if os.path.exists(selection) else table
        if os.path.exists(path):
            with open(path) as f:
                text = head_rows(f.read(), CONSOLE_ROWS, path)
            also = f"\n(every grid point: {table})" if path == selection else ""
            print(f"\n{path}:\n{text}{also}", file=sys.stderr)
    wandb = ", W&B runs: results/wandb/ (upload: snakemake wandb_sync)" if wandb_enabled else ""
    print(
        "\nfedbench: done. tables: results/tables/<experiment>.md|.csv, plots: results/plots/, "
        "metrics: results/metrics/<experiment>.parquet (every experiment of this folder: results/metrics.parquet), "
        f"per-cell runs: results/runs/, logs: results/logs/{wandb}\n"
        "report: snakemake --report results/report.html  (then open results/report.html)",
        file=sys.stderr,
    )


# Every file this config reads or skips, checked (and repaired) before the train rules read the
# cells' summary.json (stack_groups) and before Snakemake looks at any output.
verify_folder()


# Cost before launch (fedbench.estimate): the train jobs still to run, each priced from its cells'
# sample-steps and the rates learned from this config's finished cells (else the shipped ones);
# printed per experiment, with a ⚠ where a job would outrun its runtime. JOB_SECONDS: {job: its
# estimated seconds} (a stacked job by its rule name, a single cell by cell_key), read by the
# train rules' runtime when the config sets none.
STACK_GROUPS = stack_groups()


def estimate_jobs():
    """Price the train jobs still to run and print the estimate (main process only)."""
    from fedbench import estimate

    sizes = estimate.client_sizes(CELLS, DATASETS, PARTITIONS)
    engine = config.get("engine") or "vectorized"
    device = "cuda" if config.get("device") == "cuda" else "cpu"

    def work(c, stacked):
        size = sizes[(c["dataset"], c["partition"])]
        steps = estimate.sample_steps(c, *size) if size else 0.0
        return steps, estimate.rate_key(c["model"]["name"], engine, device, stacked)

    finished = []
    for c in CELLS[:5000]:  # learned rates: this config's finished cells
        try:
            with open(f"{run_dir(c)}/summary.json") as f:
                summary = json.load(f)
        except (OSError, ValueError):
            continue
        size = sizes[(c["dataset"], c["partition"])]
        finished.append((summary, estimate.sample_steps(c, *size) if size else 0.0))
    learned = estimate.learn_rates(finished)

    def job(c, cells, name, groups=1):
        e, d = c["experiment"], c["dataset"]
        own = (config["experiments"][e]["datasets"][d].get("resources") or {}).get("runtime") is not None
        return estimate.Job(e, cells, TRAIN_RESOURCES[(e, d)]["runtime"], name=name, groups=groups,
                            key=f"experiments.{e}.datasets.{d}.resources.runtime" if own else None)

    jobs = [job(g.cells[0], [work(c, True) for c in g.cells], g.name, len(g.sizes)) for g in STACK_GROUPS]
    jobs += [job(c, [work(c, False)], cell_key(c))
             for c in CELLS if c["experiment"] not in STACKED and not os.path.exists(f"{run_dir(c)}/metrics.parquet")]
    estimate.price(jobs, learned, estimate.shipped_rates())
    totals = {e: estimate.job_count([c for c in CELLS if c["experiment"] == e], STACKED.get(e)) for e in EXPERIMENTS}
    if workflow.is_main_process:
        for line in estimate.report(jobs, totals, device, learned):
            print(f"fedbench: estimate: {line}", file=sys.stderr)
    return {j.name: j.seconds for j in jobs}


JOB_SECONDS = estimate_jobs()


# The scorecard (rules/scorecard.smk): its inputs, its code version, and its print at the end of a run.


def scorecard_tables(wildcards=None):
    """The paper tables' CSVs the scorecard reads: this config's (rule paper_table) and those already
    in the folder (results/tables/paper/*.csv, left as they are), in one order whichever config runs."""
    present = [str(p) for p in Path("results/tables/paper").glob("*.csv") if not p.name.startswith(".")]
    return sorted(set(present) | {f"results/tables/paper/{n}.csv" for n in PAPER_TABLES})


def scorecard_code_version(wildcards=None):
    """The code version of the claims: the scorecard, each paper's module (its claims() and the
    functions they call there) and the minimax toy the minimax claims run; not what those import
    (editing the table formatting re-decides nothing)."""
    from fedbench.codeversion import module_closure, modules_digest

    own = [p.__name__ for p in papers.PAPERS]  # a paper package's submodules (e.g. its paper_claims) included
    names = ["fedbench.analysis.scorecard", "fedbench.analysis.minimax_toy",
             *(m for m in module_closure(own, "fedbench") if m.startswith("fedbench.papers."))]
    return modules_digest(names, "fedbench")


#: Rows of the scorecard printed at the end of a run (the files hold them all).
SCORECARD_ROWS = 40


def print_scorecard():
    """After a successful run, on stderr: the scorecard (results/tables/scorecard.md), cut to its
    first SCORECARD_ROWS rows."""
    from fedbench.analysis.tables import head_rows

    path = "results/tables/scorecard.md"
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            print(f"\n{path}:\n{head_rows(f.read(), SCORECARD_ROWS, path)}", file=sys.stderr)
