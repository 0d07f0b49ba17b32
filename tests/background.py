"""Checks that take minutes in processes of their own (valgrind's memcheck, the CUDA simulator).

Most of the suite keeps one core busy while the other waits for compile helpers now and then. A
test that needs a job's result is marked ``pytest.mark.background(job)``: the job starts when
collection ends (only when one of its tests was selected), its tests run last, and each waits
for the job's result. So the job runs on the core the rest of the suite leaves idle, not after it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable


class Job:
    """A command run once per session. ``{dir}`` in ``argv`` is a folder of the job's own, for
    the files it writes; ``env`` is added to the environment of the session at collection."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str] | None = None,
                 cwd: Path | None = None, preexec_fn: Callable[[], None] | None = None, timeout: float = 2400):
        self.name, self.argv, self.env, self.cwd = name, argv, env or {}, cwd
        self.preexec_fn, self.timeout = preexec_fn, timeout
        self.dir: Path | None = None
        self._proc: subprocess.Popen | None = None
        self._started = 0.0
        self._done: subprocess.CompletedProcess | None = None

    def start(self) -> None:
        if self._proc is not None:
            return
        self.dir = Path(tempfile.mkdtemp(prefix=f"pqforge-{self.name}-"))
        argv = [a.replace("{dir}", str(self.dir)) for a in self.argv]
        self._out = open(self.dir / "stdout", "w+")
        self._err = open(self.dir / "stderr", "w+")
        self._started = time.monotonic()
        self._proc = subprocess.Popen(argv, env={**os.environ, **self.env}, cwd=self.cwd, stdout=self._out,
                                      stderr=self._err, text=True, preexec_fn=self.preexec_fn)

    def result(self) -> subprocess.CompletedProcess:
        """Waits for the job (starting it if collection did not) and returns how it ended."""
        if self._done is None:
            self.start()
            assert self._proc is not None
            try:
                self._proc.wait(timeout=max(1.0, self.timeout - (time.monotonic() - self._started)))
            except subprocess.TimeoutExpired:
                self.stop()
                raise AssertionError(f"the {self.name} job ran past {self.timeout:.0f} s") from None
            self._out.seek(0), self._err.seek(0)
            self._done = subprocess.CompletedProcess(self._proc.args, self._proc.returncode,
                                                     self._out.read(), self._err.read())
        return self._done

    def stop(self) -> None:
        """Ends the job if it still runs and removes its folder."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        if self.dir is not None:
            self._out.close(), self._err.close()
            shutil.rmtree(self.dir, ignore_errors=True)


def jobs_of(items) -> list[Job]:
    """The jobs that the selected test items wait for, each once, in order of appearance (a
    marker's job is None where it cannot run here: its tests skip or fail on their own)."""
    jobs: dict[int, Job] = {}
    for item in items:
        marker = item.get_closest_marker("background")
        if marker is not None and marker.args[0] is not None:
            jobs.setdefault(id(marker.args[0]), marker.args[0])
    return list(jobs.values())
