"""Results as they come: one JSON line per finished row, so a killed run keeps what it measured.

An output folder holds `rows.jsonl`, appended to and flushed as soon as a
row is final (skipped, failed, checked or timed), one record a line:

    {"record": "run", "info": {...}}       an invocation starts (machine, command, ...)
    {"record": "row", ...}                 one program, size and target
    {"record": "compile", ...}             one line of the compile-time report
    {"record": "end", "elapsed_s": ...}    the invocation finished

`--resume` appends to the log of the output folder and runs only the rows
it does not hold yet; `--merge DIR ...` reads the logs of several folders
(e.g. one per chunk of the GPU run) into one set of rows. A later row of the
same program, size and target replaces an earlier one. A folder written
before the log existed is read from its results.json.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

LOG = "rows.jsonl"

#: row statuses a resumed run does not run again ("error" is retried: it is often
#: a passing problem, and a real one fails again quickly)
FINAL = {"ok", "mismatch", "skipped", "timeout"}


def row_key(row) -> tuple:
    return row["program"], row["size"], row["target"]


class RunLog:
    """The rows.jsonl of one output folder; `resume` keeps what is there."""

    def __init__(self, out: Path, resume: bool = False):
        self.path = Path(out) / LOG
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.runs, self.rows, self.compile = [], {}, {}
        if resume and self.path.is_file():
            self.runs, rows, compile_rows = read_log(self.path)
            self.rows = {row_key(r): r for r in rows}
            self.compile = {(c["target"], c["program"]): c for c in compile_rows}
        elif self.path.exists():
            self.path.unlink()
        self._t0 = time.time()

    def done(self, check_only: bool) -> set:
        """Keys of rows that need not run again (an ok row counts when it was timed,
        or when this run only checks)."""
        return {k for k, r in self.rows.items() if r["status"] in FINAL
                and (r["status"] != "ok" or check_only or r.get("median") is not None)}

    def _write(self, record: dict) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(record, default=_plain) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def start(self, info: dict) -> None:
        self.runs.append({"info": info})
        self._write({"record": "run", "info": info})

    def row(self, row: dict) -> None:
        self.rows[row_key(row)] = row
        self._write({"record": "row", **row})

    def compile_row(self, c: dict) -> None:
        self.compile[(c["target"], c["program"])] = c
        self._write({"record": "compile", **c})

    def end(self) -> None:
        elapsed = time.time() - self._t0
        if self.runs:
            self.runs[-1]["elapsed_s"] = elapsed
        self._write({"record": "end", "elapsed_s": elapsed})

    def all(self) -> tuple[dict, list, list]:
        return merge_info(self.runs), list(self.rows.values()), list(self.compile.values())


def _plain(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


def read_log(path: Path) -> tuple[list, list, list]:
    """(runs, rows, compile rows) of one rows.jsonl; a torn last line (a killed
    write) is ignored. Each run is {"info", "elapsed_s" (when it ended)}."""
    runs, rows, compile_rows = [], [], []
    for line in Path(path).read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = rec.pop("record", None)
        if kind == "run":
            runs.append({"info": rec["info"]})
        elif kind == "row":
            rows.append(rec)
        elif kind == "compile":
            compile_rows.append(rec)
        elif kind == "end" and runs:
            runs[-1]["elapsed_s"] = rec.get("elapsed_s")
    return runs, rows, compile_rows


def read_folder(folder: Path) -> tuple[list, list, list]:
    """(runs, rows, compile rows) of an output folder: its log, else its results.json."""
    folder = Path(folder)
    if (folder / LOG).is_file():
        return read_log(folder / LOG)
    if (folder / "results.json").is_file():
        data = json.loads((folder / "results.json").read_text())
        info = dict(data["info"])
        return [{"info": info, "elapsed_s": info.get("elapsed_s")}], data["results"], \
            data.get("compile", [])
    raise FileNotFoundError(f"{folder} holds neither {LOG} nor results.json")


def merge_folders(folders) -> tuple[dict, list, list]:
    """(info, rows, compile rows) of several output folders, in the order given
    (a later row of the same program, size and target wins)."""
    runs, rows, compile_rows = [], {}, {}
    for folder in folders:
        r, rs, cs = read_folder(folder)
        runs += r
        for row in rs:
            rows[row_key(row)] = row
        for c in cs:
            compile_rows[(c["target"], c["program"])] = c
    if not runs:
        raise ValueError("nothing to merge: no run in " + ", ".join(map(str, folders)))
    return merge_info(runs), list(rows.values()), list(compile_rows.values())


def merge_info(runs: list) -> dict:
    """One info record for several invocations: the machine and start of the first,
    the latest measurements of the machine, every command and note."""
    if not runs:
        return {}
    infos = [r["info"] for r in runs]
    info = dict(infos[0])
    for other in infos[1:]:
        for key in ("copy_gbs", "peak_gflops", "gpu_copy_gbs"):
            if key in other:
                info[key] = other[key]
    # a merged folder's command is already a list of its runs' commands
    commands = list(dict.fromkeys(c for i in infos for c in
                                  (i["command"] if isinstance(i["command"], list)
                                   else [i["command"]])))
    info["command"] = commands[0] if len(commands) == 1 else commands
    info["notes"] = list(dict.fromkeys(n for i in infos for n in i.get("notes", [])))
    info["targets"] = list(dict.fromkeys(t for i in infos for t in i.get("targets", [])))
    info["sizes"] = list(dict.fromkeys(s for i in infos for s in i.get("sizes", [])))
    info["check_only"] = all(i.get("check_only", False) for i in infos)
    known = [r.get("elapsed_s") for r in runs]
    info["elapsed_s"] = sum(e for e in known if e)
    info["runs"] = len(runs)
    if any(e is None for e in known):
        info["unfinished_runs"] = sum(e is None for e in known)
    if not all(i["idle_at_start"]["idle"] for i in infos):
        busy = [i["idle_at_start"] for i in infos if not i["idle_at_start"]["idle"]]
        info["idle_at_start"] = busy[0]
    return info
