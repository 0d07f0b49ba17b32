"""benchmarks/service_loop.py, the event loop's cost per hot request, still drives the service:
its every operation answered 200 (the script checks the answers before it times them)."""

import re
import runpy
import sys
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("httptools")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "service_loop.py"


def test_service_loop_times_every_hot_route(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), "--rounds", "1", "--requests", "2"])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(SCRIPT), run_name="__main__")
    assert done.value.code == 0
    out = capsys.readouterr().out
    for op in ("sign", "verify", "sign-many", "verify-many"):
        assert re.search(rf"^  {op} +least +\d+\.\d us/request", out, re.M), out


def test_service_loop_names_an_unknown_operation(monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), "--rounds", "1", "--requests", "1", "--op", "sing"])
    with pytest.raises(SystemExit, match="unknown operation 'sing'; expected one of sign, verify"):
        runpy.run_path(str(SCRIPT), run_name="__main__")
