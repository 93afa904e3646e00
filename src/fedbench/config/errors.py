"""The config's error and the words of its messages: :class:`ConfigError`, and values written as
the user wrote them (numbers, lists of options, ranges checked in mathematical interval notation)
or as they appear in a swept cell's label (:func:`_label_value`)."""

from __future__ import annotations

import math
from typing import Any


class ConfigError(ValueError):
    """An invalid workflow config. The message names the full key path and how to fix it."""


def _fmt(value: Any) -> str:
    if _is_number(value):
        return _n(value)
    return repr(value) if isinstance(value, str) else "null" if value is None else str(value)


def _known(options) -> str:
    return ", ".join("null" if o is None else str(o) for o in options) if options else "(none)"


def _either(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _n(x: Any) -> str:
    """A number as the user wrote it: -1.0 -> '-1', 0.3 -> '0.3'."""
    return f"{x:g}" if isinstance(x, float) else str(x)


def _interval(text: str) -> tuple:
    """``"[0, 1)"`` -> (0, True, 1, False); an infinite end is None, an integer end an int."""
    lo, hi = (x.strip() for x in text[1:-1].split(","))

    def end(x):  # an integer end stays an int: "<= 4294967295", not "<= 4.29497e+09"
        return None if x in ("inf", "-inf") else int(x) if x.lstrip("-").isdigit() else float(x)

    return end(lo), text[0] == "[", end(hi), text[-1] == "]"


def _check_range(v: Any, path: str, interval: str | None) -> None:
    if interval is None or not _is_number(v):
        return
    lo, lo_incl, hi, hi_incl = _interval(interval)
    if lo is not None and (v < lo or (v == lo and not lo_incl)):
        raise ConfigError(f"{path}: must be {'>=' if lo_incl else '>'} {_n(lo)} (got {_n(v)})")
    if hi is not None and (v > hi or (v == hi and not hi_incl)):
        raise ConfigError(f"{path}: must be {'<=' if hi_incl else '<'} {_n(hi)} (got {_n(v)})")


def _finite(v: Any, path: str) -> float:
    if not math.isfinite(v):
        raise ConfigError(f"{path}: must be finite (got {v})")
    return float(v)


def _label_value(v: Any) -> str:
    """A swept value in a cell label: repr of a float, str of an int, null, true/false; a local-work
    distribution as ``uniform2-5`` (drawn per round) or ``uniform2-5.client`` (fixed per client); an
    lr schedule as ``step100-200x0.1`` (milestones, factor)."""
    if isinstance(v, dict) and "milestones" in v:
        from fedbench.engine.spec import schedule_label

        return schedule_label(v)
    if isinstance(v, dict) and "distribution" in v:
        from fedbench.engine.clients.batches import work_label

        return work_label(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    return repr(v) if isinstance(v, float) else str(v)
