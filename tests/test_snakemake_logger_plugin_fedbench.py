"""The console logger (src/snakemake_logger_plugin_fedbench): long file lists cut to a count,
everything else as Snakemake prints it; found by Snakemake's plugin registry under `fedbench`."""

from __future__ import annotations

import io
import logging

from snakemake_interface_logger_plugins.common import LogEvent
from snakemake_interface_logger_plugins.registry import LoggerPluginRegistry

from snakemake_logger_plugin_fedbench import (
    LogHandler,
    ShortListsFormatter,
    short_list,
    short_reason,
    short_reasons_summary,
)


def job_info(**over) -> dict:
    msg = dict(rule_msg=None, jobid=7, local=True, is_checkpoint=False, rule_name="collect", log=[],
               input=[f"results/runs/c{i}/metrics.parquet" for i in range(756)],
               output=["results/metrics.parquet"], benchmark=None, wildcards={"experiment": "fedac"},
               reason="Missing output files: results/metrics.parquet", priority=0, threads=1,
               resources={"mem_mb": 1000}, indent=False)
    return {**msg, **over}


def test_a_list_longer_than_four_is_cut_to_three_and_a_count():
    files = [f"f{i}" for i in range(10)]
    assert short_list(files) == "f0, f1, f2, … and 7 more (10 files)"
    assert short_list(files[:4]) == "f0, f1, f2, f3"  # cutting one would save nothing
    assert short_list([]) == ""


def test_the_reasons_file_lists_are_cut_and_its_other_parts_kept():
    many = ", ".join(f"results/runs/c{i}/summary.json" for i in range(60))
    reason = (f"Missing output files: {many}; Code has changed since last execution; Updated input files: a, b; "
              f"Input files updated by another job: {many}")
    cut = ("results/runs/c0/summary.json, results/runs/c1/summary.json, results/runs/c2/summary.json, "
           "… and 57 more (60 files)")
    assert short_reason(reason) == (f"Missing output files: {cut}; Code has changed since last execution; "
                                    f"Updated input files: a, b; Input files updated by another job: {cut}")
    assert short_reason("Forced execution") == "Forced execution"
    assert short_reason("Params have changed since last execution: x, y, z, w, v") == \
        "Params have changed since last execution: x, y, z, w, v"  # not a file list


def test_a_job_block_is_snakemakes_with_the_lists_cut():
    text = ShortListsFormatter().format_job_info(job_info())
    lines = text.splitlines()
    assert lines[1] == "localrule collect:"
    assert ("    input: results/runs/c0/metrics.parquet, results/runs/c1/metrics.parquet, "
            "results/runs/c2/metrics.parquet, … and 753 more (756 files)") in lines
    assert "    output: results/metrics.parquet" in lines
    assert "    wildcards: experiment=fedac" in lines and "    resources: mem_mb=1000" in lines
    assert max(map(len, lines)) < 200


def test_snakemake_finds_the_plugin_and_its_handler_writes_the_short_block():
    plugin = LoggerPluginRegistry().get_plugin("fedbench")
    assert plugin.log_handler is LogHandler

    class Settings:
        printshellcmds = nocolor = debug_dag = verbose = show_failed_logs = stdout = dryrun = False
        quiet = set()

    handler = LogHandler(Settings(), None)
    assert handler.writes_to_stream and not handler.writes_to_file and handler.has_formatter
    handler.console.stream = io.StringIO()
    record = logging.LogRecord("snakemake", logging.INFO, __file__, 1, None, None, None)
    record.__dict__.update(job_info(), event=LogEvent.JOB_INFO)
    handler.emit(record)
    out = handler.console.stream.getvalue()
    assert "… and 753 more (756 files)" in out and "c755" not in out


def test_the_dry_runs_reasons_summary_lists_three_rules_and_a_count():
    rules = ", ".join(f"train_group_{i}" for i in range(50))
    text = ("Reasons:\n    (check individual jobs above for details)\n    output files have to be generated:\n"
            f"        {rules}, ...")
    text += "\n    updated input:\n        collect, all"
    assert short_reasons_summary(text).split("\n") == [
        "Reasons:", "    (check individual jobs above for details)", "    output files have to be generated:",
        "        train_group_0, train_group_1, train_group_2, … and 47 more (50 rules, and more)",
        "    updated input:", "        collect, all"]
