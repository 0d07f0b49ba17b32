"""Output files that are either written whole or not at all.

    outputs = [Output("msg.ct"), Output("ss.bin", secret=True)]
    check_outputs(outputs, force=False)      # before any work: paths usable, nothing overwritten
    ...                                      # the work
    write_outputs(outputs, [ct, ss], force=False)

Every file is first written to a temporary file in its own directory and renamed into place only
when all of them are complete, so a failure leaves no half-written or unmatched output (no
ciphertext whose shared secret was lost). A secret output is created with mode 0600, also when
it replaces an existing file: the rename puts a new file there, it does not reuse the old one's
mode. ``-`` is standard output.
"""

from __future__ import annotations

import errno
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import InvalidInput

STDOUT = "-"


@dataclass(frozen=True)
class Output:
    path: str
    secret: bool = False


def check_outputs(outputs: list[Output], force: bool) -> None:
    """InvalidInput naming the first output that cannot be written (or would be overwritten
    without ``force``); nothing is created."""
    seen: set[str] = set()
    for out in outputs:
        if out.path == "":
            raise InvalidInput("an output path is empty")
        if out.path in seen:
            raise InvalidInput(f"{out.path} is given for two outputs" if out.path != STDOUT
                               else "only one output can go to standard output ('-')")
        seen.add(out.path)
        if out.path == STDOUT:
            continue
        path = Path(out.path)
        if path.is_dir():
            raise InvalidInput(f"{path} is a directory; expected a file path")
        if path.exists() and not force:
            raise InvalidInput(f"{path} exists; use --force to overwrite")
        folder = path.parent
        if not folder.is_dir():
            raise InvalidInput(f"cannot write {path}: directory {folder} does not exist")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise InvalidInput(f"cannot write {path}: directory {folder} is not writable")


def _public_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o644 & ~mask


def write_outputs(outputs: list[Output], contents: list[bytes], force: bool) -> None:
    """Write ``contents[i]`` to ``outputs[i]``: all files complete in temporary files first, then
    renamed into place; standard output last."""
    temps: list[tuple[str, Output]] = []
    placed: list[str] = []
    try:
        for out, data in zip(outputs, contents):
            if out.path == STDOUT:
                continue
            fd, temp = tempfile.mkstemp(dir=Path(out.path).parent, prefix=f".{Path(out.path).name}.", suffix=".tmp")
            temps.append((temp, out))
            with os.fdopen(fd, "wb") as f:   # mkstemp creates the file with mode 0600
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            if not out.secret:
                os.chmod(temp, _public_mode())
        while temps:
            temp, out = temps[0]
            _rename(temp, out.path, force)
            temps.pop(0)
            placed.append(out.path)
    except BaseException:
        for path in placed:     # neither: an output whose partner failed is taken back
            os.unlink(path)
        raise
    finally:
        for temp, _ in temps:
            os.unlink(temp)
    for out, data in zip(outputs, contents):
        if out.path == STDOUT:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()


def _rename(temp: str, path: str, force: bool) -> None:
    if force:
        os.replace(temp, path)
        return
    try:                       # a hard link never replaces a file that appeared since the check
        os.link(temp, path)
    except FileExistsError:
        raise InvalidInput(f"{path} exists; use --force to overwrite") from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        if os.path.exists(path):   # no hard links on this file system
            raise InvalidInput(f"{path} exists; use --force to overwrite") from None
        os.replace(temp, path)
        return
    os.unlink(temp)
