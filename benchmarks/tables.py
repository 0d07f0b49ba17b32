"""BENCHMARKS.md's generated tables, from the results kept under benchmarks/.

    python benchmarks/tables.py            # print every block
    python benchmarks/tables.py --write    # replace the blocks in BENCHMARKS.md
    python benchmarks/tables.py --check    # exit 1 if BENCHMARKS.md is not up to date
    python benchmarks/tables.py FILE...    # print the tables of these results files only

Comparisons: every ``benchmarks/results/*.jsonl`` (format in benchmarks/results/README.md). For
each (comparison, machine) the newest run (date, then time_utc, then file name) gives one table
(in the service's comparison, one per kernel set forced with PQFORGE_KERNELS): per parameter
set and operation, each implementation's best figure over the rounds (the least time, or the
greatest rate) and its ratio to the reference implementation named in the
run's meta line, if it names one. GPU: the newest ``benchmarks/h200-*.json`` (written by pqforge.bench.gpu)
gives throughput, latency and kernel tables.

A block sits between ``<!-- tables:begin NAME -->`` and ``<!-- tables:end NAME -->`` in
BENCHMARKS.md, NAME being the comparison (or ``gpu``); everything outside the markers is left
as it is. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def _cpuinfo() -> dict[str, str]:
    """The first processor's entries in /proc/cpuinfo (empty where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            first = f.read().split("\n\n")[0]
    except OSError:
        return {}
    return {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in first.splitlines() if ":" in line)}


def machine() -> str:
    """The processor as the results files name it: model name, family and model, vCPUs, and the
    CPU quota where one limits this process (``benchmarks/cpu_quota.sh``)."""
    import os
    import platform
    info = _cpuinfo()
    try:
        model = f"{info['model name']} family {info['cpu family']} model {info['model']}"
    except KeyError:
        model = platform.processor() or platform.machine()
    # what decides the kernel sets: the core generation and the vector extensions it has
    flags = info.get("flags", "").split()
    features = [name for flag, name in (("avx2", "AVX2"), ("avx512f", "AVX-512"), ("gfni", "GFNI")) if flag in flags]
    generation = _GENERATIONS.get(_generation())
    described = ": ".join(part for part in (generation, ", ".join(features)) if part)
    model += f" ({described})" if described else ""
    quota = cpu_quota()
    limited = f" with a CPU quota of {quota:g} (`benchmarks/cpu_quota.sh`)" if quota else ""
    return f"{model}, {os.cpu_count()} vCPU{limited}"


def cpu_quota() -> float | None:
    """How many cores' worth of CPU time this process's cgroup may use (a CFS quota, as
    ``benchmarks/cpu_quota.sh`` sets), or None where nothing limits it below the machine."""
    import os
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        try:
            if controllers == "":                                  # cgroup v2
                with open(f"/sys/fs/cgroup{path}/cpu.max") as f:
                    quota, period = f.read().split()
            elif "cpu" in controllers.split(","):                  # cgroup v1
                base = f"/sys/fs/cgroup/{controllers}{path}"
                if not os.path.isdir(base):
                    base = f"/sys/fs/cgroup/cpu{path}"
                with open(f"{base}/cpu.cfs_quota_us") as f, open(f"{base}/cpu.cfs_period_us") as g:
                    quota, period = f.read().strip(), g.read().strip()
            else:
                continue
        except (OSError, ValueError):
            continue
        if quota not in ("max", "-1"):
            cores = int(quota) / int(period)
            if cores < (os.cpu_count() or 1):
                return cores
    return None


def quota_prefix() -> str:
    """The part of a recorded command that ran it under this process's CPU quota, or ""."""
    quota = cpu_quota()
    return f"bash benchmarks/cpu_quota.sh {quota:g} " if quota else ""


def machine_tag() -> str:
    """A short name of the processor for results file names: AMD's core generation (zen1-2,
    zen3, zen4, zen5), "intel", or the architecture; "-quotaN" after it under a CPU quota."""
    quota = cpu_quota()
    return _generation() + (f"-quota{quota:g}" if quota else "")


_GENERATIONS = {"zen1-2": "Zen 1-2", "zen3": "Zen 3", "zen4": "Zen 4", "zen5": "Zen 5"}


def _generation() -> str:
    import platform
    info = _cpuinfo()
    try:
        vendor, family, model = info["vendor_id"], int(info["cpu family"]), int(info["model"])
    except (KeyError, ValueError):
        return platform.machine()
    if vendor == "AuthenticAMD":
        if family == 23:
            return "zen1-2"
        if family == 25:
            return "zen4" if 0x10 <= model <= 0x1F or 0x60 <= model <= 0x7F or 0xA0 <= model <= 0xAF else "zen3"
        if family == 26:
            return "zen5"
    return "intel" if vendor == "GenuineIntel" else platform.machine()


DOCUMENT = HERE.parent / "BENCHMARKS.md"

REQUIRED = ("comparison", "machine", "date", "command", "method")
UNITS = {"us": ("µs", "lower"), "ms": ("ms", "lower"), "s": ("s", "lower"),
         "per_s": ("per second", "higher")}


class ResultsError(Exception):
    pass


# ---------------------------------------------------------------- results files

def load_run(path: Path) -> dict:
    """The meta line and the rows of one results file, checked."""
    meta, rows = None, []
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise ResultsError(f"{where}: not JSON ({e.msg})") from None
            if not isinstance(record, dict):
                raise ResultsError(f"{where}: not a JSON object")
            if meta is None:
                meta = _check_meta(record, where)
            else:
                rows.append(_check_row(record, where))
    if meta is None:
        raise ResultsError(f"{path}: empty")
    if not rows:
        raise ResultsError(f"{path}: a meta line but no rows")
    keys = {row["key"] for row in rows}
    if len(keys) != 1:
        raise ResultsError(f"{path}: the rows' figures are under different keys: {sorted(keys)}")
    key = keys.pop()
    # the unit: the rows' key ("us", "per_s", ...); the meta's "unit" may say more in words
    unit = meta.get("unit") or key
    known = UNITS.get(key) or UNITS.get(re.match(r"\S*", unit).group())
    better = meta.get("better") or (known[1] if known else None)
    if better not in ("lower", "higher"):
        raise ResultsError(f'{path}: figures under "{key}" are not in a known unit '
                           f"({', '.join(UNITS)}); say \"better\": \"lower\" or \"higher\" in the meta")
    meta = dict(meta, better=better, key=key, unit_shown=known[0] if known else key)
    return {"path": path, "meta": meta, "rows": rows}


def _check_meta(record: dict, where: str) -> dict:
    meta = record.get("meta")
    if not isinstance(meta, dict):
        raise ResultsError(f'{where}: the first line must be {{"meta": {{...}}}}')
    missing = [k for k in REQUIRED if not isinstance(meta.get(k), str) or not meta[k].strip()]
    if missing:
        raise ResultsError(f"{where}: meta lacks {', '.join(missing)}")
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", meta["date"]):
        raise ResultsError(f"{where}: date {meta['date']!r} is not YYYY-MM-DD")
    for k in ("unit", "reference", "time_utc", "better"):
        if meta.get(k) is not None and not isinstance(meta[k], str):
            raise ResultsError(f"{where}: meta {k} must be a string")
    return meta


def _check_row(record: dict, where: str) -> dict:
    if not isinstance(record.get("round"), int) or isinstance(record.get("round"), bool):
        raise ResultsError(f"{where}: round must be an integer")
    for key in ("alg", "impl"):
        if not isinstance(record.get(key), str) or not record[key]:
            raise ResultsError(f"{where}: {key} must be a non-empty string")
    rest = [k for k in record if k not in ("round", "alg", "impl")]
    if len(rest) != 1 or not isinstance(record[rest[0]], dict) or not record[rest[0]]:
        raise ResultsError(f"{where}: a row is round, alg, impl and one object of figures "
                           '(under its unit: "us", "per_s", ...)')
    figures = record[rest[0]]
    for op, value in figures.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise ResultsError(f"{where}: {op} = {value!r} is not a non-negative number")
    return {"round": record["round"], "alg": record["alg"], "impl": record["impl"],
            "key": rest[0], "figures": figures}


PER_SET = {"service-load"}
"""Comparisons whose runs each measure one kernel set: each forced set keeps a table of its own."""


def newest_runs(runs: list[dict]) -> dict[tuple[str, str, str], dict]:
    """The newest run of each (comparison, machine, kernel set): in a ``PER_SET`` comparison, a
    run that forced one set (``PQFORGE_KERNELS``, said in its meta's ``kernels``) is the newest
    of that set, any other the newest of the machine's own choice."""
    newest: dict[tuple[str, str, str], dict] = {}
    for run in runs:
        meta = run["meta"]
        kernels = meta.get("kernels") or ""
        forced = kernels.split()[0] if meta["comparison"] in PER_SET and "forced with PQFORGE_KERNELS" in kernels else ""
        key = (meta["comparison"], meta["machine"], forced)
        order = (meta["date"], meta.get("time_utc") or "", run["path"].name)
        if key not in newest or order > newest[key][0]:
            newest[key] = (order, run)
    return {key: run for key, (_, run) in newest.items()}


def _in_order(values) -> list:
    seen: dict = {}
    for v in values:
        seen.setdefault(v, None)
    return list(seen)


def _shown(path: Path) -> str:
    try:
        return path.resolve().relative_to(HERE.parent).as_posix()
    except ValueError:
        return str(path)


def text(markdown: str) -> str:
    """A free-text field as Markdown: < and > escaped outside `code spans` (not taken for HTML)."""
    parts = re.split(r"(`[^`]*`)", markdown)
    return "".join(part if part.startswith("`") and part.endswith("`") and len(part) > 1 else
                   part.replace("<", "&lt;").replace(">", "&gt;") for part in parts)


def cell(value: str) -> str:
    """A name in a table cell."""
    return text(value).replace("|", "\\|")


def number(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.1f}"


KNOWN = {"comparison", "machine", "date", "time_utc", "unit", "reference", "command", "method",
         "reference_build", "reference_command", "cpu", "kernels", "commit", "better", "note",
         "key", "unit_shown"}


def _sentence(markdown: str) -> str:
    markdown = text(markdown.strip())
    return markdown if markdown.endswith((".", "!", "?")) else markdown + "."


def comparison_table(run: dict) -> str:
    meta, rows = run["meta"], run["rows"]
    pick = min if meta["better"] == "lower" else max
    best: dict[tuple[str, str, str], float] = {}
    for row in rows:
        for op, value in row["figures"].items():
            key = (row["alg"], row["impl"], op)
            best[key] = pick(best[key], value) if key in best else value
    algs = _in_order(r["alg"] for r in rows)
    ops = _in_order(op for r in rows for op in r["figures"])
    impls = _in_order(r["impl"] for r in rows)
    reference = meta.get("reference") if meta.get("reference") in impls else None
    others = [i for i in impls if i != reference]
    unit = meta["unit_shown"]
    rounds = sorted({r["round"] for r in rows})

    head = ["set", "operation"]
    head += [f"{cell(reference)} ({unit})"] if reference else []
    head += [f"{cell(impl)} ({unit}, ratio)" if reference else f"{cell(impl)} ({unit})"
             for impl in others]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "---|" * 2 + "---:|" * (len(head) - 2)]
    for alg in algs:
        for op in ops:
            if not any((alg, impl, op) in best for impl in impls):
                continue
            ref = best.get((alg, reference, op)) if reference else None
            cells = [cell(alg), cell(op)]
            if reference:
                cells.append(number(ref) if ref is not None else "—")
            for impl in others:
                value = best.get((alg, impl, op))
                if value is None:
                    cells.append("—")
                elif ref:
                    ratio = value / ref      # (two significant digits below a tenth)
                    cells.append(f"{number(value)} ({ratio:.2f}x)" if ratio >= 0.1 else f"{number(value)} ({ratio:.2g}x)")
                else:
                    cells.append(number(value))
            lines.append("| " + " | ".join(cells) + " |")

    when = meta["date"] + (f", {meta['time_utc']} UTC" if meta.get("time_utc") else "")
    out = [f"**{text(meta['machine'])}**, {when}; `{_shown(run['path'])}`.", "", *lines, ""]
    figures = ("- Figures: one round" if len(rounds) == 1 else
               f"- Figures: the {'least' if meta['better'] == 'lower' else 'greatest'} over "
               f"{len(rounds)} rounds")
    if reference:
        worse = "slower" if meta["key"] in UNITS else "worse"      # (a count of work, not a time or a rate)
        figures += (f" per side; ratio = figure / {text(reference)}, above 1 "
                    f"{worse if meta['better'] == 'lower' else 'faster'} than it.")
    else:
        figures += "." if not meta.get("reference") else \
            f"; the reference {text(meta['reference'])} has no rows in this run, so no ratios."
    out.append(figures)
    if meta.get("unit") and meta["unit"] != meta["key"]:
        out.append(f"- Unit: {_sentence(meta['unit'])}")
    if meta.get("cpu"):
        out.append(f"- Machine: {_sentence(meta['cpu'])}")
    if meta.get("kernels"):
        out.append(f"- Kernels: {_sentence(meta['kernels'])}")
    out.append(f"- Command: {_sentence(meta['command'])}")
    if meta.get("commit"):
        out.append(f"- Commit: {_sentence(meta['commit'])}")
    if meta.get("reference_build") or meta.get("reference_command"):
        parts = [p for p in (meta.get("reference_build"), meta.get("reference_command")) if p]
        out.append(f"- {text(meta['reference'])}: " + _sentence("; timed by ".join(parts)))
    out.append(f"- Method: {_sentence(meta['method'])}")
    for key, value in meta.items():
        if key not in KNOWN and isinstance(value, str) and value.strip():
            out.append(f"- {text(key.replace('_', ' ').capitalize())}: {_sentence(value)}")
    if meta.get("note"):
        out.append(f"- {_sentence(meta['note'])}")
    return "\n".join(out)


# ---------------------------------------------------------------- GPU (pqforge.bench.gpu JSON)

GPU_COLUMNS = (   # (heading, path, keys): the rows pqforge.bench.gpu writes
    ("verify, same key", "bitsliced", "same key"),
    ("verify, distinct keys", "bitsliced", "distinct keys (one expansion per signature)"),
    ("sign, same key", "bitsliced sign", "same key"),
    ("sign, distinct keys", "bitsliced sign", "distinct keys (one expansion per signature)"),
    ("keygen", "bitsliced keygen", "distinct keys"),
    ("tensor verify", "tensor (cupy)", "same key"),
    ("tensor sign", "tensor sign (cupy)", "same key"),
)
GPU_LATENCY_EXTRA = (
    ("expand a public key", "bitsliced", "expand one key"),
    ("expand a secret key", "bitsliced sign", "expand one secret key"),
)


def newest_gpu_file() -> Path | None:
    best = None
    for path in sorted(HERE.glob("h200-*.json")):
        try:
            date = json.loads(path.read_text(encoding="utf-8"))["machine"]["date"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ResultsError(f"{path}: not a pqforge.bench.gpu result ({e})") from None
        if best is None or (date, path.name) > best[0]:
            best = ((date, path.name), path)
    return best[1] if best else None


def gpu_tables(path: Path) -> str:
    data = json.loads(path.read_text(encoding="utf-8"))
    machine, results = data.get("machine", {}), data.get("results", [])
    measured: dict[tuple[str, str, str], dict[int, dict]] = {}
    for r in results:
        if r.get("per_s") is None or str(r.get("note", "")).startswith("first call"):
            continue   # skipped points, and first calls (they include compiling)
        measured.setdefault((r["alg"], r["path"], r["keys"]), {})[r["batch"]] = r
    algs = _in_order(r["alg"] for r in results)
    largest = max((b for points in measured.values() for b in points), default=0)

    out = [f"**{machine.get('gpu', 'GPU')}**, host {machine.get('processor', '?')} "
           f"({machine.get('cpus', '?')} cores), Python {machine.get('python', '?')}, "
           f"{machine.get('date', '?')}; `{_shown(path)}`.", "",
           f"Throughput per second at a batch of {largest:,} (in brackets: the largest batch "
           "that ran where a larger one was skipped):", ""]
    head = ["set"] + [c[0] for c in GPU_COLUMNS]
    out += ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for alg in algs:
        cells = [alg]
        for _, p, k in GPU_COLUMNS:
            points = measured.get((alg, p, k), {})
            batch = max((b for b in points if b > 1), default=None)
            if batch is None:
                cells.append("—")
            else:
                text = f"{points[batch]['per_s']:,.0f}"
                cells.append(text if batch == largest else f"{text} ({batch:,})")
        out.append("| " + " | ".join(cells) + " |")

    out += ["", "Latency of one operation (batch 1, ms, kernels compiled):", ""]
    columns = GPU_COLUMNS[:1] + GPU_COLUMNS[2:3] + GPU_COLUMNS[4:5] + GPU_LATENCY_EXTRA + \
        GPU_COLUMNS[5:]
    head = ["set"] + [c[0].replace(", same key", "") for c in columns]
    out += ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for alg in algs:
        cells = [alg]
        for _, p, k in columns:
            point = measured.get((alg, p, k), {}).get(1)
            cells.append(f"{point['seconds'] * 1000:.1f}" if point else "—")
        out.append("| " + " | ".join(cells) + " |")

    model = data.get("model") or []
    rate = next((m["ops_per_s"] for m in model if m.get("kernel") == "word-op rate"), None)
    kernels = [m for m in model if "threads" in m]
    if kernels:
        out += ["", "The kernels alone (no transfers, no host work) per block size, against the "
                "operation-count model" + (f" (the device's measured masked-XOR rate, "
                f"{rate:.3g} word operations per second)".replace("e+", "e") if rate else "") + ":", "",
                "| set | kernel | batch | threads/block | per second | ops/instance | "
                "model per second | % of model |",
                "|---|---|---:|---:|---:|---:|---:|---:|"]
        for m in kernels:
            model_rate = m["batch"] / m["model_s"] if m.get("model_s") else None
            out.append(f"| {m.get('alg', '')} | {m['kernel']} | {m['batch']:,} | {m['threads']} | "
                       f"{m['per_s']:,.0f} | {m['ops_per_instance']:,.0f} | "
                       + (f"{model_rate:,.0f}" if model_rate else "—") +
                       f" | {m['pct_of_model']:.1f}% |")
    return "\n".join(out)


# ---------------------------------------------------------------- the document

def blocks() -> dict[str, str]:
    runs = [load_run(p) for p in sorted(RESULTS.glob("*.jsonl"))]
    by_comparison: dict[str, list[str]] = {}
    for (comparison, _, _), run in sorted(newest_runs(runs).items()):
        by_comparison.setdefault(comparison, []).append(comparison_table(run))
    out = {name: "\n\n".join(tables) for name, tables in by_comparison.items()}
    gpu = newest_gpu_file()
    if gpu is not None:
        out["gpu"] = gpu_tables(gpu)
    return out


MARKER = re.compile(r"(<!-- tables:begin (\S+) -->\n)(.*?)(<!-- tables:end \2 -->)", re.S)


def fill(document: str, generated: dict[str, str]) -> tuple[str, list[str]]:
    """The document with every block replaced, and what could not be placed."""
    problems, placed = [], set()

    def replace(match: re.Match) -> str:
        name = match.group(2)
        placed.add(name)
        if name not in generated:
            problems.append(f"BENCHMARKS.md has a block {name!r} but there are no results for it")
            body = f"*No results for `{name}`.*"
        else:
            body = generated[name]
        return f"{match.group(1)}\n{body}\n\n{match.group(4)}"

    document = MARKER.sub(replace, document)
    for name in generated:
        if name not in placed:
            problems.append(f"no block for {name!r} in BENCHMARKS.md: add "
                            f"'<!-- tables:begin {name} -->' and '<!-- tables:end {name} -->'")
    return document, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, help="results files to print alone")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--write", action="store_true", help="replace the blocks in BENCHMARKS.md")
    what.add_argument("--check", action="store_true",
                      help="exit 1 if BENCHMARKS.md differs from what --write would make")
    args = parser.parse_args(argv)
    try:
        if args.files:
            if args.write or args.check:
                parser.error("FILE... only prints")
            print("\n\n".join(comparison_table(load_run(p)) for p in args.files))
            return 0
        generated = blocks()
    except (ResultsError, OSError) as e:
        print(f"tables.py: {e}", file=sys.stderr)
        return 2
    if not (args.write or args.check):
        for name, body in generated.items():
            print(f"<!-- tables:begin {name} -->\n\n{body}\n\n<!-- tables:end {name} -->\n")
        return 0
    document = DOCUMENT.read_text(encoding="utf-8")
    updated, problems = fill(document, generated)
    for problem in problems:
        print(f"tables.py: {problem}", file=sys.stderr)
    if args.check:
        if updated != document:
            print("tables.py: BENCHMARKS.md is not up to date: "
                  "run python benchmarks/tables.py --write", file=sys.stderr)
            return 1
        return 1 if problems else 0
    if updated != document:
        DOCUMENT.write_text(updated, encoding="utf-8")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
