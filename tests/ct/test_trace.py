"""The trace check: identical traces for constant-time kernels, differences for leaky ones."""

import numpy as np
import pytest

import ct_kernels as k
from pqforge.ct import trace
from pqforge.ct.registry import Target


@pytest.mark.parametrize("opcodes", [False, True], ids=["lines", "opcodes"])
@pytest.mark.parametrize("target", [k.CT_SELECT, k.CT_NESTED], ids=lambda t: t.name)
def test_constant_time_kernels_pass(target, opcodes):
    result = trace.check_target(target, pairs=3, opcodes=opcodes)
    assert result.ok and result.strict_ok, result.summary()
    assert result.events[0] > 20  # the kernel body really ran under the tracer


@pytest.mark.parametrize("opcodes", [False, True], ids=["lines", "opcodes"])
def test_a_branch_on_the_secret_fails(opcodes):
    result = trace.check_target(k.LEAKY_SELECT, pairs=3, opcodes=opcodes)
    assert not result.ok
    assert "leaky_select" in result.divergence and "out[i] =" in result.divergence


def test_a_branch_in_a_called_kernel_fails():
    result = trace.check_target(k.LEAKY_NESTED, pairs=3)
    assert not result.ok
    assert "_branchy_callee" in result.divergence


def test_a_one_line_conditional_needs_opcode_tracing():
    # the limit of line tracing: both arms are on one line
    assert trace.check_target(k.LEAKY_TERNARY, pairs=3, indices=False).ok
    by_opcode = trace.check_target(k.LEAKY_TERNARY, pairs=3, opcodes=True, indices=False)
    assert not by_opcode.ok and "offset" in by_opcode.divergence
    # the index trace also sees it: a different array is read
    assert trace.check_target(k.LEAKY_TERNARY, pairs=3).same_indices is False


def test_a_secret_table_index_is_seen_by_the_index_trace():
    result = trace.check_target(k.LEAKY_LOOKUP, pairs=3)
    assert result.ok  # control flow alone cannot see it
    assert result.same_indices is False and not result.strict_ok
    assert "global TABLE" in result.index_divergence


def test_a_secret_index_into_a_local_array_is_seen():
    result = trace.check_target(k.LEAKY_SCRATCH, pairs=3)
    assert result.ok and result.same_indices is False
    assert "np.zeros" in result.index_divergence


def test_secret_pairs_share_public_arguments():
    rng = np.random.default_rng(0)
    a, b = trace.secret_pair(k.CT_SELECT, None, rng)
    assert not np.array_equal(a[0], b[0])
    for i in (1, 2, 3):
        assert np.array_equal(a[i], b[i]) and a[i] is not b[i]


def test_public_only_differences_are_not_blamed_on_secrets():
    # a kernel that branches on a *public* argument passes: the public inputs are identical
    target = Target("branch-on-public", "", k.leaky_select,
                    lambda p, rng, f: (rng.integers(0, 256, 16, dtype=np.uint8),
                                       rng.integers(0, 256, 16, dtype=np.uint8),
                                       rng.integers(0, 256, 16, dtype=np.uint8), np.zeros(16, np.uint8)),
                    secret_args=(1, 2))
    assert trace.check_target(target, pairs=3).ok


def test_the_twin_computes_what_the_kernel_computes():
    rng = np.random.default_rng(1)
    args = k._select_inputs(None, rng, False)
    compiled = [a.copy() for a in args]
    k.ct_select(*compiled)
    twin_args = [a.copy() for a in args]
    with np.errstate(over="ignore"):
        trace.TwinBuilder().twin(k.ct_select)(*twin_args)
    assert np.array_equal(compiled[3], twin_args[3])


@pytest.mark.parametrize("target", [k.LEAKY_SELECT, k.LEAKY_NESTED, k.LEAKY_LOOKUP, k.LEAKY_SCRATCH, k.CT_SELECT],
                         ids=lambda t: t.name)
def test_records_kept_as_block_digests_find_the_same_difference(target, monkeypatch):
    # a full-size kernel runs billions of steps: a record keeps one digest per block and the steps
    # of one block only; with blocks of 3 steps the check must report what it reports in one block
    whole = trace.check_target(target, pairs=3)
    monkeypatch.setattr(trace, "BLOCK", 3)
    blocks = trace.check_target(target, pairs=3)
    assert blocks.summary() == whole.summary()
    assert (blocks.divergence, blocks.index_divergence) == (whole.divergence, whole.index_divergence)


def test_a_record_holds_digests_not_steps(monkeypatch):
    monkeypatch.setattr(trace, "BLOCK", 4)
    args, _ = trace.secret_pair(k.CT_NESTED, None, np.random.default_rng(0))
    events = trace.trace_call(k.ct_nested, args).events
    assert events.count > 20 and events.kept == []
    assert len(events.digests) == -(-events.count // 4)
    kept = trace.trace_call(k.ct_nested, args, keep=2).events
    assert len(kept.kept) == 4 and kept.digests == events.digests


def test_a_trace_that_stops_early_differs_where_it_stops(monkeypatch):
    monkeypatch.setattr(trace, "BLOCK", 4)
    a = trace.Record()
    b = trace.Record()
    for step in range(8):
        a.add(step)
    for step in range(11):
        b.add(step)
    assert trace._first_different_block(a.finish(), b.finish()) == 2
    assert trace._first_different_block(a, a) is None


def test_progress_hears_of_every_step_traced(monkeypatch):
    monkeypatch.setattr(trace, "BLOCK", 4)
    heard = []
    result = trace.check_target(k.CT_NESTED, pairs=1, progress=heard.append)
    assert result.ok and set(heard) <= {1, 2, 3, 4}
    assert sum(heard) == sum(result.events) + sum(result.index_records)
