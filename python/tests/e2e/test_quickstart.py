# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""docs/python.md's notebook quick start, cell by cell, on the real node: the
job trains, its log is followed to the end, its progress read, and it
succeeds."""

import contextlib
import io
import pathlib
import re

DOC = pathlib.Path(__file__).resolve().parents[3] / "docs" / "python.md"


def quickstart_cells():
    text = DOC.read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_quickstart_runs_as_documented(namespace, real_node):
    cells = quickstart_cells()
    assert len(cells) >= 5, "the quick start lost its cells"
    scope = {}
    outputs = []
    for cell in cells:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(cell.replace('"my-team"', repr(namespace)), str(DOC), "exec"), scope)  # noqa: S102
        outputs.append(out.getvalue())
    created, logs, progress, done, _ = outputs[1], outputs[2], outputs[3], outputs[4], outputs[5:]
    assert re.fullmatch(r"[0-9a-f-]{36}\n", created), created
    # Rank 0's own lines, to its last step: the log was followed to the end.
    assert "rank=0 step=1 " in logs and "rank=0 step=20 " in logs and "rank=0 done steps=20" in logs, logs
    # The last report may still wait for the write interval: a step of 20.
    assert re.match(r"([1-9]|1[0-9]|20) 20 \[\{'name': 'loss'", progress), progress
    assert done.startswith("Succeeded "), done
