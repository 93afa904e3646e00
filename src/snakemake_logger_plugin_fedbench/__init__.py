"""fedbench's console for Snakemake: its own job blocks, with long file lists cut to a count.

Snakemake prints, for each job, every input and output file and the files behind its reason on one
line each. A job of fedbench's workflow can name hundreds of files (the collect job of FedAc's a9a
grid reads 756 cells' metrics), which made single console lines of up to ~200,000 characters. This
logger prints the same blocks (rule, wildcards, resources, the reason's kinds) with any list of more
than :data:`SHOWN` + 1 files cut to its first :data:`SHOWN` and a count; the complete lists stay in
Snakemake's log file (``.snakemake/log/<time>.snakemake.log``, printed at the end of every run).

Selected by the workflow profile (``profiles/default/config.yaml``: ``logger: [fedbench]``);
``snakemake --workflow-profile none`` or ``--logger`` with another plugin bring Snakemake's own back.
A Snakemake logger plugin is found by its module name (``snakemake_logger_plugin_<name>``): see
snakemake-interface-logger-plugins.
"""

from __future__ import annotations

import sys
from logging import LogRecord

from snakemake.logging import ColorizingTextHandler, DefaultFormatter
from snakemake_interface_logger_plugins.base import LogHandlerBase

#: Files shown of a longer list; a list of up to SHOWN + 1 files is shown whole.
SHOWN = 3


def short_list(files: list[str] | tuple[str, ...], shown: int = SHOWN, what: str = "files") -> str:
    """``files`` joined by ", ", cut after ``shown`` files with "… and n more (m <what>)" when longer
    than ``shown + 1`` (cutting one file would save nothing)."""
    files = [str(f) for f in files]
    if len(files) <= shown + 1:
        return ", ".join(files)
    return ", ".join(files[:shown]) + f", … and {len(files) - shown} more ({len(files)} {what})"


def short_reason(reason: str, shown: int = SHOWN) -> str:
    """Snakemake's reason ("Missing output files: a, b, …; Updated input files: …"), each of its
    parts' file lists ("Missing output files", "Input files updated by another job", …) cut by
    :func:`short_list`. Parts without a file list are kept as they are."""
    parts = []
    for part in str(reason).split("; "):
        label, sep, rest = part.partition(": ")
        if sep and " files" in label and ", " in rest:
            rest = short_list(rest.split(", "), shown)
        parts.append(label + sep + rest)
    return "; ".join(parts)


def short_reasons_summary(text: str, shown: int = SHOWN) -> str:
    """A dry run's closing "Reasons:" summary (each reason, then the rules it applies to on one
    line, up to 50 names) with each rule list cut by :func:`short_list`."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("        ") and ", " in line:
            names = line.strip().split(", ")
            capped = names[-1] == "..."  # Snakemake lists at most 50 rules, then "..."
            names = names[:-1] if capped else names
            if len(names) > shown + 1:
                lines[i] = "        " + short_list(names, shown, "rules, and more" if capped else "rules")
    return "\n".join(lines)


class ShortListsFormatter(DefaultFormatter):
    """Snakemake's console formatter with the job blocks' file lists and the dry run's reasons
    summary cut (:func:`short_list`)."""

    def format(self, record) -> str:
        text = super().format(record)
        if isinstance(text, str) and text.startswith("Reasons:\n"):
            return short_reasons_summary(text)
        return text

    def format_job_info(self, msg: dict) -> str:
        msg = dict(msg)
        for key in ("input", "output", "log"):
            if msg.get(key):
                msg[key] = [short_list(msg[key])]
        if msg.get("reason"):
            msg["reason"] = short_reason(msg["reason"])
        return super().format_job_info(msg)


class LogHandler(LogHandlerBase):
    """The console handler: Snakemake's colouring and stream, :class:`ShortListsFormatter`'s text."""

    def __post_init__(self) -> None:
        settings = self.common_settings
        self.console = ColorizingTextHandler(
            nocolor=settings.nocolor, stream=sys.stdout if settings.stdout else sys.stderr,
            formatter=ShortListsFormatter(settings.quiet, settings.show_failed_logs))

    def emit(self, record: LogRecord) -> None:
        self.console.emit(record)

    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return False  # Snakemake's own filter (quiet, dry run, printshellcmds) applies

    @property
    def has_formatter(self) -> bool:
        return True

    @property
    def needs_rulegraph(self) -> bool:
        return False
