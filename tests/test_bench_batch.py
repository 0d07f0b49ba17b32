"""bench-batch's public-call measurement runs the public calls and the CPU backend and reports both."""

from pqforge.bench import batch as bench


def test_public_call_section_measures_both_paths_and_the_gil_share():
    res = bench.run(["MAYO-2"], batch_size=16, distinct=2, threads=2, seconds=0.01, kernels_too=False, rounds=1)
    row = res["sets"][0]
    for name in ("sign public", "sign engine", "verify public", "verify engine"):
        assert row["public"][name]["per_s"] > 0
    for op in ("sign", "verify"):
        g = row["gil_held"][op]
        assert g["whole_us"] > 0 and g["compiled_us"] > 0
        assert abs(g["gil_us"] - (g["whole_us"] - g["compiled_us"])) < 1e-9
    table = bench.table(res)
    assert "sign/s public" in table and "GIL-held" in table and "| MAYO-2 |" in table
