"""Weights & Biases: one W&B run per training cell, offline by default, and a comparison report.

Opt-in (config ``wandb.enabled``); everything here is runtime only and never a rule param, so
turning W&B on or changing its project reruns no training. The workflow (rules/wandb.smk):

``wandb_log`` (per cell, after train)
    :func:`log_cell` reads the cell's ``metrics.parquet`` and ``summary.json`` and writes one
    run: project from the config, group ``<experiment>/<dataset>/<partition>``, job_type = the
    algorithm label, name ``<algorithm>/seed=<seed>``, config = the resolved cell spec (plus
    hparams_id, the algorithm's code version, the paper's registry key), tags = ``seed=<s>`` and
    the paper's key, one history step per evaluated round (step = round), and the cell's final
    summary.
    Offline runs go to ``results/wandb/wandb/offline-run-*``; the returned record (run id,
    directory, mode) is the rule's output.
``wandb_sync``
    :func:`sync_runs` uploads the offline runs of the current cells with ``wandb sync``.
``wandb_report``
    :func:`build_report` makes a W&B Report (``wandb-workspaces``), one section per
    experiment: accuracy and loss curves by algorithm (mean ± sd over seeds) per dataset and
    partition, final accuracy by algorithm, and the experiment's summary table. The block list
    is built by the pure function :func:`report_blocks` (tested without network).

Mode: ``offline`` (default) or ``online``; ``online`` without an API key (WANDB_API_KEY or a
``wandb login`` entry in ~/.netrc) falls back to offline. A ``WANDB_MODE`` environment variable
(offline, online, disabled) wins over the config, as everywhere in W&B.

:func:`read_offline_run` reads an offline run's ``.wandb`` file back (run info, config,
history, summary) without the network: to check a run before syncing it, and in the tests.
"""

from __future__ import annotations

import json
import netrc
import os
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from urllib.parse import urlparse

__all__ = [
    "resolve_mode", "has_api_key", "run_config", "log_cell", "read_offline_run", "offline_runs_to_sync",
    "sync_runs", "report_sections", "report_blocks", "build_report",
]

#: metrics.parquet columns that identify the cell (in the W&B config, not the history).
_IDENTITY = ("experiment", "dataset", "partition", "algorithm", "algorithm_name", "hparams_id", "seed")
#: summary.json keys copied into the W&B run summary.
_SUMMARY_KEYS = ("status", "rounds_completed", "final_test_accuracy", "best_test_accuracy", "final_train_loss",
                 "uplink_floats", "wall_seconds", "peak_rss_mb", "num_parameters", "device", "engine", "hparams_id")


def has_api_key() -> bool:
    """Whether a W&B API key is configured: WANDB_API_KEY, or a netrc entry for the W&B host."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    host = urlparse(os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai").hostname or "api.wandb.ai"
    try:
        path = os.environ.get("NETRC") or os.path.expanduser("~/.netrc")
        auth = netrc.netrc(path).authenticators(host)
    except (FileNotFoundError, netrc.NetrcParseError, OSError):
        return False
    return bool(auth and auth[2])


def resolve_mode(mode: str = "offline") -> tuple[str, str]:
    """(the W&B mode to use, why). WANDB_MODE wins; online needs an API key, else offline."""
    env = os.environ.get("WANDB_MODE")
    if env:
        return env, "WANDB_MODE is set"
    if mode == "online" and not has_api_key():
        return "offline", "no W&B API key is configured (WANDB_API_KEY or `wandb login`)"
    return mode, "config wandb.mode"


def run_config(summary: Mapping, code_version: str | None = None, paper: str | None = None) -> dict:
    """The W&B config of a cell: its resolved spec (from summary.json) + hparams_id, code version, paper."""
    cfg = dict(summary["spec"])
    cfg["hparams_id"] = summary.get("hparams_id")
    if code_version is not None:
        cfg["code_version"] = code_version
    if paper is not None:
        cfg["paper"] = paper
    return cfg


def _clean(v):
    """A JSON-friendly scalar (W&B logs NaN/inf as such; numpy scalars become Python ones)."""
    if hasattr(v, "item"):
        v = v.item()
    return v


def log_cell(
    metrics_path: str | os.PathLike,
    summary_path: str | os.PathLike,
    settings: Mapping,
    root: str | os.PathLike = "results/wandb",
    paper: str | None = None,
    code_version: str | None = None,
) -> dict:
    """Write one W&B run for a finished cell; return its record (id, name, group, dir, mode, ...).

    Args:
        settings: the config's ``wandb`` block (:func:`fedbench.config.wandb_settings`).
        root: W&B's ``dir``: runs go to ``<root>/wandb/<offline-run-...>``.
        paper: the experiment's paper (a tag and a config key), if any.
        code_version: the algorithm's code version (a config key), if known.
    """
    import polars as pl
    import wandb

    summary = json.loads(Path(summary_path).read_text())
    spec = summary["spec"]
    df = pl.read_parquet(metrics_path).sort("round")
    mode, why = resolve_mode(settings.get("mode", "offline"))
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    tags = [f"seed={spec['seed']}"] + ([paper] if paper else [])
    group = f"{spec['experiment']}/{spec['dataset']}/{spec['partition']}"
    name = f"{spec['algorithm']}/seed={spec['seed']}"
    run = wandb.init(
        project=settings.get("project", "fedbench"),
        entity=settings.get("entity"),
        group=group,
        job_type=spec["algorithm"],
        name=name,
        tags=tags,
        config=run_config(summary, code_version, paper),
        dir=str(root),
        mode=mode,
        settings=wandb.Settings(console="off", save_code=False, x_disable_stats=True, x_disable_meta=True,
                                disable_git=True, silent=True),
    )
    try:
        numeric = [c for c, t in df.schema.items() if c not in _IDENTITY and c != "status" and t.is_numeric()]
        for row in df.select(numeric).iter_rows(named=True):
            run.log({k: _clean(v) for k, v in row.items() if v is not None}, step=int(row["round"]))
        run.summary.update({k: summary[k] for k in _SUMMARY_KEYS if k in summary})
        record = {
            "id": run.id,
            "name": name,
            "group": group,
            "job_type": spec["algorithm"],
            "project": settings.get("project", "fedbench"),
            "entity": settings.get("entity"),
            "mode": mode,
            "mode_reason": why,
            "dir": None if mode == "disabled" else str(Path(run.dir).parent),
            "rounds_logged": df.height,
            "url": None if mode != "online" else run.url,
        }
    finally:
        run.finish()
    if mode == "offline":
        _wait_until_written(record["dir"])
    return record


def _wait_until_written(run_dir: str, timeout: float = 120.0) -> None:
    """Block until the offline run's ``.wandb`` file holds its exit record.

    ``run.finish()`` can return while W&B's service process is still writing the file (seen on a
    loaded machine); waiting here means a finished ``wandb_log`` job always leaves a complete run
    for ``wandb sync``. Raises TimeoutError naming the directory if the record never appears.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            if read_offline_run(run_dir)["finished"]:
                return
        except (FileNotFoundError, IndexError, ValueError):
            pass  # not created or half-written yet
        if time.monotonic() > deadline:
            raise TimeoutError(f"W&B did not finish writing the offline run in {run_dir} within {timeout:.0f} s")
        time.sleep(0.2)


# ------------------------------------------------------------------------------------------
# Reading an offline run back: the .wandb file is W&B's LevelDB-style log of protobuf Records
# (header ":W&B" + magic 0xBEE1 + version 0; 32 KiB blocks; each chunk: crc32, length, type).

_BLOCK = 32768
_HEADER = struct.Struct("<4sHB")
_CHUNK = struct.Struct("<IHB")
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def _records(path: Path) -> Iterable[bytes]:
    data = path.read_bytes()
    if len(data) < _HEADER.size:
        raise ValueError(f"{path}: empty or truncated W&B run file")
    ident, magic, _version = _HEADER.unpack_from(data)
    if ident != b":W&B" or magic != 0xBEE1:
        raise ValueError(f"{path}: not a W&B run file")
    pos, parts = _HEADER.size, []
    while pos + _CHUNK.size <= len(data):
        left = _BLOCK - pos % _BLOCK
        if left < _CHUNK.size:  # block trailer padding
            pos += left
            continue
        crc, n, kind = _CHUNK.unpack_from(data, pos)
        pos += _CHUNK.size
        if n == 0 and kind == 0:
            pos += left - _CHUNK.size  # zero padding to the end of the block
            continue
        chunk = data[pos:pos + n]
        pos += n
        if zlib.crc32(chunk, zlib.crc32(bytes([kind]))) & 0xFFFFFFFF != crc:
            raise ValueError(f"{path}: checksum mismatch at byte {pos - n}")
        if kind == _FULL:
            yield chunk
        elif kind == _FIRST:
            parts = [chunk]
        elif kind == _MIDDLE:
            parts.append(chunk)
        elif kind == _LAST:
            yield b"".join(parts + [chunk])
            parts = []


def _item_key(item) -> str:
    return item.key or "/".join(item.nested_key)


def read_offline_run(run_dir: str | os.PathLike) -> dict:
    """Read an offline W&B run directory (``.../offline-run-<time>-<id>``) without the network.

    Returns:
        ``{"run": {id, project, entity, group, job_type, name, tags}, "config": {...},
        "history": [{key: value, ...} per step, with "_step"], "summary": {...}, "finished": bool}``
        (values decoded from W&B's JSON; keys starting with ``_`` are W&B's own).
    """
    from wandb.proto import wandb_internal_pb2 as pb

    run_dir = Path(run_dir)
    files = sorted(run_dir.glob("run-*.wandb"))
    if not files:
        raise FileNotFoundError(f"{run_dir}: no run-*.wandb file")
    out = {"run": {}, "config": {}, "history": [], "summary": {}, "finished": False}
    for raw in _records(files[0]):
        rec = pb.Record()
        rec.ParseFromString(raw)
        kind = rec.WhichOneof("record_type")
        if kind == "run":
            r = rec.run
            out["run"] = {"id": r.run_id, "project": r.project, "entity": r.entity, "group": r.run_group,
                          "job_type": r.job_type, "name": r.display_name, "tags": list(r.tags)}
            for item in r.config.update:
                out["config"][_item_key(item)] = json.loads(item.value_json)
        elif kind == "config":
            for item in rec.config.update:
                out["config"][_item_key(item)] = json.loads(item.value_json)
        elif kind == "history":
            out["history"].append({_item_key(i): json.loads(i.value_json) for i in rec.history.item})
        elif kind == "summary":
            for item in rec.summary.update:
                out["summary"][_item_key(item)] = json.loads(item.value_json)
        elif kind == "exit":
            out["finished"] = True
    out["config"].pop("_wandb", None)
    return out


# ------------------------------------------------------------------------------------------
# Sync


def offline_runs_to_sync(records: Iterable[Mapping]) -> list[str]:
    """The run directories of offline ``records`` (from :func:`log_cell`) not synced yet."""
    out = []
    for r in records:
        if r.get("mode") != "offline" or not r.get("dir"):
            continue
        d = Path(r["dir"])
        if not any(d.glob("run-*.wandb.synced")):
            out.append(str(d))
    return out


def sync_runs(records: Iterable[Mapping], settings: Mapping, log=sys.stderr) -> list[str]:
    """Upload the offline runs of ``records`` with ``wandb sync`` (needs the network and an API
    key); return the directories synced. Already synced runs are skipped."""
    dirs = offline_runs_to_sync(records)
    if not dirs:
        print("wandb_sync: no offline runs left to sync", file=log)
        return []
    if not has_api_key():
        raise RuntimeError("wandb_sync: no W&B API key configured; run `wandb login` or set WANDB_API_KEY")
    cmd = [sys.executable, "-m", "wandb", "sync", "--project", settings.get("project", "fedbench")]
    if settings.get("entity"):
        cmd += ["--entity", settings["entity"]]
    print("wandb_sync: " + " ".join(cmd) + f" <{len(dirs)} runs>", file=log)
    subprocess.run(cmd + dirs, check=True, stdout=log, stderr=log)
    return dirs


# ------------------------------------------------------------------------------------------
# Report (wandb-workspaces)


def _q(s: str) -> str:
    return "'" + str(s).replace("\\", "\\\\").replace("'", "\\'") + "'"


def report_sections(cells: Iterable[Mapping], tables_md: Mapping[str, str]) -> list[dict]:
    """The sections of :func:`report_blocks`: one per experiment of ``cells``, in their order, with
    its (dataset, partition) pairs, its paper (the paper's name, :func:`fedbench.papers.display_name`,
    for a registry key) and its Markdown table (``tables_md``: experiment -> the text of
    results/tables/<experiment>.md).

    Args:
        cells: the workflow's cells (:func:`fedbench.config.expand_cells`), or any dicts with
            experiment, dataset, partition and (optional) paper.
    """
    from fedbench.papers import display_name

    cells = list(cells)
    sections = []
    for exp in dict.fromkeys(c["experiment"] for c in cells):
        mine = [c for c in cells if c["experiment"] == exp]
        panels = list(dict.fromkeys((c["dataset"], c["partition"]) for c in mine))
        sections.append({"name": exp, "panels": panels, "table_md": tables_md[exp],
                         "paper": display_name(mine[0].get("paper"))})
    return sections


def report_blocks(sections: Sequence[Mapping], entity: str, project: str) -> list:
    """The blocks of the comparison report, one section per experiment. Pure: no network.

    Args:
        sections: one mapping per experiment: ``name``; ``panels``: list of (dataset,
            partition); ``table_md``: the experiment's Markdown table (results/tables/<e>.md);
            optional ``paper``.
        entity, project: where the runs are (always explicit: no API lookup).
    """
    import wandb_workspaces.reports.v2 as wr

    blocks: list = [wr.TableOfContents()]
    for sec in sections:
        exp = sec["name"]
        blocks.append(wr.H1(text=f"Experiment {exp}"))
        intro = f"Runs of experiment `{exp}`" + (f", reproducing {sec['paper']}" if sec.get("paper") else "")
        blocks.append(wr.P(text=intro + ": curves are the mean over seeds (band: ± sd), one line per algorithm."))
        for dataset, partition in sec["panels"]:
            blocks.append(wr.H2(text=f"{dataset} / {partition}"))
            runset = wr.Runset(
                entity=entity,
                project=project,
                name=f"{exp}/{dataset}/{partition}",
                filters=(f"Config('experiment') = {_q(exp)} and Config('dataset') = {_q(dataset)} "
                         f"and Config('partition') = {_q(partition)}"),
                groupby=["config.algorithm"],
            )
            blocks.append(wr.PanelGrid(
                runsets=[runset],
                panels=[
                    wr.LinePlot(title="test accuracy", x="round", y=["test_accuracy"],
                                groupby_aggfunc="mean", groupby_rangefunc="stddev"),
                    wr.LinePlot(title="train loss", x="round", y=["train_loss"], log_y=True,
                                groupby_aggfunc="mean", groupby_rangefunc="stddev"),
                    wr.BarPlot(title="final test accuracy", metrics=["final_test_accuracy"],
                               groupby_aggfunc="mean", groupby_rangefunc="stddev"),
                ],
            ))
        blocks.append(wr.H2(text="Summary table"))
        blocks.append(wr.MarkdownBlock(text=sec["table_md"]))
    return blocks


def build_report(sections: Sequence[Mapping], entity: str, project: str, title: str = "fedbench comparison"):
    """The W&B Report object (not saved: call ``.save()``, which needs the network)."""
    import wandb_workspaces.reports.v2 as wr

    names = ", ".join(s["name"] for s in sections)
    return wr.Report(entity=entity, project=project, title=title[:128],
                     description=f"Federated optimization comparison: {names}. Generated by fedbench.",
                     width="fluid", blocks=report_blocks(sections, entity, project))
