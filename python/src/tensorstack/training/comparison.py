# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""Jobs side by side: one metric of several jobs as one table, the rows
:meth:`TrainingClient.compare <tensorstack.training.TrainingClient.compare>`
returns. The dashboard's comparison (``#/compare``) draws the same series
and its CSV has the same columns.

Each row is one report of one job: ``job`` (its name), ``step``,
``elapsed_seconds`` (since the job first started: the earliest of its first
kept attempt, ``status.startTime`` and its first report), ``time`` (the
report's time, RFC 3339 as the server wrote it) and the metric's value as a
float.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

#: What the rows are ordered and aligned by: the reported step, the time
#: since the job started, or the wall clock.
ALIGNS = ("step", "elapsed", "time")

COLUMNS = ("job", "step", "elapsed_seconds", "time")

_FRACTION = re.compile(r"\.(\d+)")


def parse_time(value: Optional[str]) -> Optional[datetime]:
    """An RFC 3339 time of the API (``2026-01-01T00:00:01.123456Z``) as an
    aware datetime, or None. Python 3.9's fromisoformat takes neither the
    ``Z`` nor fractions other than of 3 or 6 digits."""
    if not value:
        return None
    text = value.strip().replace("Z", "+00:00").replace("z", "+00:00")
    text = _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], text, count=1)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def run_start(job: Mapping[str, Any], samples: Sequence[Mapping[str, Any]]) -> Optional[datetime]:
    """When the job first started, as elapsed_seconds counts: the earliest of
    its first kept attempt, its current run's start and its first report,
    so that a job resumed after a pause counts from its first start; its
    creation when it never started."""
    status = job.get("status") or {}
    attempts = status.get("attempts") or []
    candidates = [attempts[0].get("startTime") if attempts else None, status.get("startTime"),
                  samples[0].get("reportTime") if samples else None]
    times = [t for t in (parse_time(c) for c in candidates) if t is not None]
    if times:
        return min(times)
    return parse_time((job.get("metadata") or {}).get("creationTimestamp"))


def _number(value: Any) -> Optional[float]:
    """A metric's value as a float; None for one that is not a finite number
    (metrics are decimal strings in the API)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def job_rows(name: str, job: Mapping[str, Any], samples: Sequence[Mapping[str, Any]], metric: str,
             align: str) -> List[Dict[str, Any]]:
    """One job's rows of the metric, ordered by align. By step, reports
    without a step are left out and a step reported again (a run resumed
    from an earlier checkpoint) keeps its last report, as the dashboard's
    chart does."""
    if align not in ALIGNS:
        raise ValueError(f"align must be one of {', '.join(ALIGNS)}, not {align!r}")
    start = run_start(job, samples)
    rows: List[Dict[str, Any]] = []
    for sample in samples:
        value = next((_number(m.get("value")) for m in sample.get("metrics") or [] if m.get("name") == metric), None)
        if value is None:
            continue
        when = parse_time(sample.get("reportTime"))
        elapsed = (when - start).total_seconds() if when is not None and start is not None else None
        rows.append({"job": name, "step": sample.get("step"), "elapsed_seconds": elapsed,
                     "time": sample.get("reportTime"), metric: value})
    if align == "step":
        by_step: Dict[int, Dict[str, Any]] = {}
        for row in rows:
            if row["step"] is not None:
                by_step[row["step"]] = row
        return [by_step[s] for s in sorted(by_step)]
    return rows


def comparison_rows(histories: Iterable[Tuple[str, Mapping[str, Any], Sequence[Mapping[str, Any]]]], metric: str,
                    align: str = "step") -> List[Dict[str, Any]]:
    """The rows of every job, (name, job, samples) each, ordered by align
    and then in the order the jobs were given."""
    keyed = []
    for order, (name, job, samples) in enumerate(histories):
        for row in job_rows(name, job, samples, metric, align):
            keyed.append((order, row))
    def key(item: Tuple[int, Dict[str, Any]]) -> Tuple[Any, ...]:
        order, row = item
        if align == "time":
            when = parse_time(row["time"])
            value = when.timestamp() if when is not None else None
        else:
            value = row["step" if align == "step" else "elapsed_seconds"]
        return (value is None, value if value is not None else 0, order)

    return [row for _, row in sorted(keyed, key=key)]


def as_table(rows: List[Dict[str, Any]], metric: str) -> Any:
    """The rows as a pandas DataFrame, its time column as UTC datetimes,
    when pandas is installed; else the rows themselves. The client does not
    depend on pandas."""
    try:
        import pandas
    except ImportError:
        return rows
    frame = pandas.DataFrame(rows, columns=[*COLUMNS, metric])
    frame["time"] = pandas.to_datetime(frame["time"], utc=True)
    return frame
