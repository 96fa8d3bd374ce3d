"""jaxlib's Shardy in a child process, for passes that may crash it: Shardy's
`debug-sharding-origins` reads a value's origins without checking they exist
(`source_sharding.cc`, `DenseMap::at`), which kills the process on some programs.

    with ShardyWorker() as shardy:
        out = shardy.run(text, "builtin.module(sdy-aggressive-propagate)")  # None: it crashed

The child (`python -m tests.shardy_worker`) reads one JSON request per line and answers one JSON
line; after a crash the next request starts a new child.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class ShardyWorker:
    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.crashes = 0
        self.last_error = ""  # why the last run gave None

    def __enter__(self) -> ShardyWorker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()  # type: ignore[union-attr]
            self.proc.wait()
            self.proc = None

    def run(self, text: str, pipeline: str) -> str | None:
        """Shardy's output for `text` under `pipeline`, or None if Shardy crashed or failed on
        it (`last_error` says which)."""
        if self.proc is None:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.shardy_worker"], cwd=ROOT, text=True,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"text": text, "pipeline": pipeline}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            self.proc = None
            self.crashes += 1
            self.last_error = "Shardy crashed"
            return None
        answer = json.loads(line)
        if "error" in answer:
            self.last_error = answer["error"]
            return None
        return answer["out"]


def _serve() -> None:
    from tests.shardy_compare import run_shardy

    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = {"out": run_shardy(request["text"], request["pipeline"])}
        except Exception as e:  # a Shardy error is the test's to report, not the worker's
            answer = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    _serve()
