"""The memcheck run behind test_memcheck.py, in a process of its own: every target with secrets
of ALGS and the control kernels of ``memcheck_kernels`` under one memcheck check, the results
pickled to the path given (``python memcheck_job.py OUT``)."""

import pickle
import sys
from pathlib import Path

from pqforge.ct import memcheck, registry

import memcheck_kernels as mk

ALGS = ("MAYO-2", "Classic-McEliece-348864")
CONTROLS = (mk.MASKED_SELECT, mk.BRANCHING_SELECT, mk.TABLE_LOOKUP, mk.DECLASSIFIED_BRANCH)


def secret_targets(alg):
    return [t for t in registry.all_targets() if t.secret_args and alg in t.algs]


def main(out: str) -> None:
    # each target at its first algorithm, which is one of ALGS
    targets = [t for alg in ALGS for t in secret_targets(alg)] + list(CONTROLS)
    assert all(t.algs[0] in ALGS for t in targets if t.algs)
    Path(out).write_bytes(pickle.dumps({r.target: r for r in memcheck.check(targets)}))


if __name__ == "__main__":
    main(sys.argv[1])
