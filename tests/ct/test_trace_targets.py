"""The trace check over every registered kernel that sees secrets.

At CI speed the kernels run at a small parameter set (the loop bounds are public sizes, so a
smaller set changes how often each line runs, not which lines run for which secret); solution
sampling also runs once at MAYO-2's real sizes. ``pqforge ct trace --alg MAYO-5`` runs any set.
Every compiled function of both schemes must be registered or named here as inner, public-only
or (McEliece) a secret kernel without a target of its own.
"""

import pytest

from pqforge.ct import registry, trace
from pqforge.mayo.params import MayoParams

# m = 28 keeps one 64-bit limb per plane, and k(k+1)/2 + 3 < m as the whipping reduction requires
SMALL = MayoParams("small", n=15, m=28, o=11, k=6, f_tail=(8, 0, 2, 8), salt_bytes=24,
                   digest_bytes=32, pk_seed_bytes=16, sk_seed_bytes=24)
# for the solver: k*o = 66 gives two limbs per row, and few rows keep it quick
SMALL_SOLVE = MayoParams("small-solve", n=37, m=12, o=33, k=2, f_tail=(8, 0, 2, 8), salt_bytes=24,
                         digest_bytes=32, pk_seed_bytes=16, sk_seed_bytes=24)


def small(target):
    return SMALL_SOLVE if target.func.__name__ in ("sample_solution", "sign_attempt") else SMALL

KERNELS = [t for t in registry.traceable() if t.name.startswith(("gf16-", "mayo-", "shake256"))]


def _unclassified(modules, classified) -> list[str]:
    """Every compiled function in the namespaces of ``modules`` (imported ones too) that is not
    in ``classified``: one that sees secrets but is not trace-checked."""
    return [f"{module.__name__}.{name}" for module in modules for name, obj in vars(module).items()
            if hasattr(obj, "py_func") and obj not in classified]


def test_every_secret_kernel_is_registered_for_the_trace_check():
    import importlib
    import pkgutil

    from pqforge import shake
    from pqforge.gf16 import blocks, gfni, sets, shuffle
    from pqforge.gf16 import kernels as gk
    from pqforge.mayo import kernels as mk
    from pqforge.mayo.kernels import batch as bk
    from pqforge.mayo.kernels import encoded as gn
    from pqforge.mayo.kernels import layout, products, solve, verify, whipping
    covered = {t.func for t in KERNELS}
    # public data and sizes; named without a fallback, so that a renamed kernel fails here
    public_only = {getattr(products, n) for n in ("packed_row_starts", "place_rows")}
    public_only |= {getattr(verify, n) for n in ("evaluate_public_sized", "public_pairs", "public_pairs_nibbles",
                                                 "_public_pairs_any", "_public_pairs_checked", "_public_pairs",
                                                 "_drain_buckets", "_times_x", "_aligned_zeros", "verify_sized",
                                                 "hash_target")}
    public_only |= {getattr(layout, n) for n in ("slots_to_bitsliced", "equals_nibbles", "encode_nibbles_into",
                                                 "keystream_to_slots")}
    inner = {getattr(solve, n) for n in ("_entry", "_lowest_bit", "_smear_down", "_parity", "_gt_bit", "_transpose64",
                                         "sample_solution_bitsliced", "_echelon_form")}
    inner |= {getattr(mk.sign, n) for n in ("attempt_inputs", "encode_signature", "salt_and_target")}  # in signing
    inner |= {layout.put}
    inner |= {getattr(products, n) for n in ("_bit_masks", "_combine", "_mul_transposed_core")}
    inner |= {layout.bitslice_into, whipping._shift_xor, whipping.whip_bitsliced, mk.whip_and_solve, gk.planes_times_x,
              gk.times_x, gk.nibbles_times_x}
    # the batch loops: public-data verification, and compositions of registered kernels
    public_only |= {bk.verdict, bk._equal, bk._element_scratch, bk.verify_chunk, bk.verify_chunk_encoded,
                    bk.verify_fresh_keys, bk.verify_fresh_keys_encoded, bk._element_inputs, bk._target,
                    bk.targets, shake.shake256_rows}
    inner |= {bk.sign_chunk, bk.sign_chunk_encoded, bk.sign_fresh_keys, bk.sign_fresh_keys_encoded,
              bk.public_keys_chunk, bk.public_keys_chunk_encoded, shake.keccak_f1600,
              shake._load64}
    modules = [gk, shake, *(importlib.import_module(f"{mk.__name__}.{m.name}") for m in pkgutil.iter_modules(mk.__path__)
                            if m.name != "encoded")]
    if len(sets.runnable()) > 1:     # the encoded sets' targets exist only where they compile
        modules += [gfni, shuffle, gn]
        inner |= {gfni.scalar_matrix, shuffle._table_words, gn._add_p1_times_oil,
                  gn.quadratic_pairs, gn.oil_forms, gfni.row_scratch}
        public_only |= {gn.evaluate_public, gn.verify, blocks.slot_words}     # a slot's size from the tuple's length
        public_only |= {gn._public_slots, gn.expanded_public}   # AES-128-CTR of the public seed, laid out
        inner |= {gn._seed_expansion}
    # a set's own kernels whose targets exist only where that set runs (the CPU cannot run them)
    elsewhere = {gfni.scalar_matrices} if "gfni" not in sets.runnable() else set()
    unclassified = _unclassified(modules, covered | public_only | inner | elsewhere)
    assert not unclassified, f"see secrets but are not trace-checked: {unclassified}"


def test_every_secret_mceliece_kernel_is_registered_or_named_as_a_gap():
    import importlib
    import pkgutil

    import pqforge.mceliece
    from pqforge import shake
    from pqforge.mceliece import benes, decode, fft, gf, matrix
    targets = [t for t in registry.traceable() if t.name.startswith("mceliece-")]
    covered = {t.func for t in targets}
    # called inside the registered kernels, and traced with them (checked below)
    inner = {benes._bitrev_bits, benes._ct_min, benes._exchange, benes._exchange_halves, benes._layer_step,
             benes._set_bit, benes._spread32, benes._swap_masked, benes.apply_benes,
             decode._inverse_square_12, decode._inverse_square_13, decode._locator_12, decode._locator_13, decode._monic_locator, decode._monic_values, decode._popcount64,
             decode._power_sums,
             fft._log2, fft._low_word, fft._wide_level, fft.fft_coefficients,
             fft.fft_evaluate, fft.fft_transposed,
             gf._classic_field, gf._nonzero_mask, gf.parity64, gf.bit_mask, gf.gf_inv, gf.gf_mul,
             gf.gf_reduce_all, gf.gf_scale, gf.poly_mulmod, gf.vec_inverse_square, gf.vec_mul,
             matrix._eq_mask}
    # public data and sizes: the Benes network's input sequence, the public key and its padding,
    # Berlekamp-Massey's words per plane (from m)
    public_only = {benes.bitrev_planes, matrix.pack_public_key, matrix.padding_ok, gf.bm_words}
    # they see secrets but have no target of their own; named so that the gap stays in view
    unregistered = {
        # key generation's matrix work and its support (docs/constant-time.md: not registered)
        matrix.parity_check_matrix, matrix.eliminate_rows, matrix.move_pivot_columns, matrix._add_masked,
        matrix._get64, matrix._put64, matrix._ctz64, gf.vec_times_z_table, gf.vec_eval_table, gf.vec_mul_table,
        gf.vec_add_scalar, gf.vec_from_scalars, gf.vec_inv, gf.vec_square, benes.support_from_control_bits,
        # FixedWeight: its rejection loop tests the random words, public by design as in the
        # submission; encap_preimage joins it to the registered weight-vector and syndrome kernels
        matrix.fixed_weight_indices, matrix.encap_preimage, matrix.encapsulation,
        # decapsulation's byte layer around decap_preimage: parsing the private key and the key-format
        # checks (declassified), timed and memcheck-checked through the mceliece-decap-* operations
        decode.decap_preimage_bytes, decode.goppa_encoding_ok, decode.pivot_field_ok, decode.decapsulation,
        # the shared secret's hash (its own target, "shake256", runs with MAYO's sets)
        shake.shake256_into,
        # called by the tests only
        gf.vec_eval, gf.vec_to_scalars,
    }
    traced = set()
    for t in targets:
        builder = trace.TwinBuilder()
        builder.twin(t.func)
        traced |= builder.codes
    not_traced = sorted(k.__name__ for k in inner if k.py_func.__code__ not in traced)
    assert not not_traced, f"listed as inner, but no registered kernel calls them: {not_traced}"
    stale = sorted(k.__name__ for k in (public_only | unregistered) & covered)
    assert not stale, f"registered now, so no longer public-only or a gap: {stale}"
    modules = [importlib.import_module(f"pqforge.mceliece.{m.name}")
               for m in pkgutil.iter_modules(pqforge.mceliece.__path__)]
    unclassified = _unclassified(modules, covered | inner | public_only | unregistered)
    assert not unclassified, f"see secrets but are not trace-checked: {unclassified}"


@pytest.mark.parametrize("target", KERNELS, ids=lambda t: t.name)
def test_secret_kernels_have_secret_independent_flow_and_indices(target):
    result = trace.check_target(target, pairs=2, params=small(target))
    assert result.ok, result.summary()
    assert result.same_indices is True, result.summary()


@pytest.mark.parametrize("name", ["mayo-whip", "mayo-sample-solution", "gf16-nonzero-mask"])
def test_no_hidden_conditional_at_opcode_level(name):
    target = registry.get(name)
    result = trace.check_target(target, pairs=1, params=small(target), opcodes=True, indices=False)
    assert result.ok, result.summary()


def test_solution_sampling_at_real_size():
    result = trace.check_target(registry.get("mayo-sample-solution"), "MAYO-2", pairs=1, indices=False)
    assert result.ok and result.events[0] > 200000, result.summary()



@pytest.mark.parametrize("name", ["mceliece-decap-preimage-key", "mceliece-decap-preimage-validity"])
def test_mceliece_decapsulation_core_flow(name):
    # real size (the smallest set); flow only here, `pqforge ct trace --strict` adds the indices
    result = trace.check_target(registry.get(name), pairs=1, indices=False)
    assert result.ok and result.events[0] > 100000, result.summary()


@pytest.mark.parametrize("name", ["mceliece-weight-vector", "mceliece-syndrome", "mceliece-sort-network",
                                  "mceliece-berlekamp-massey"])
def test_mceliece_encapsulation_and_sorting_kernels(name):
    # real size; the Benes control bits and the Goppa polynomial take minutes as Python, so they
    # are left to `pqforge ct trace --target mceliece-control-bits` and `--target mceliece-genpoly`
    result = trace.check_target(registry.get(name), pairs=1)
    assert result.ok and result.same_indices is True, result.summary()
