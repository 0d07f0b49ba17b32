"""The whole-operation targets feed their operations what their descriptions promise."""

import numpy as np
import pytest

from pqforge.ct import registry


def _draw(target, params, fixed, seed):
    return target.make_inputs(params, np.random.default_rng(seed), fixed)


def test_mayo_sign_targets():
    mayo = pytest.importorskip("pqforge.mayo")
    key, message = registry.get("mayo-sign-key"), registry.get("mayo-sign-message")
    _, p = key.resolve_params("MAYO-2")
    a, b = _draw(key, p, True, 1), _draw(key, p, True, 1)
    assert a[1] == b[1] and a[2] == b[2]                   # one fixed key, one message
    assert _draw(key, p, False, 2)[1] != a[1]              # random class: another key
    assert len(mayo.sign(*a)) == p.sig_bytes
    c, d = _draw(message, p, True, 1), _draw(message, p, False, 2)
    assert c[1] == d[1] and c[2] != d[2]                   # one key, the message varies


def test_mayo_verify_targets_use_valid_signatures():
    mayo = pytest.importorskip("pqforge.mayo")
    key, message = registry.get("mayo-verify-key"), registry.get("mayo-verify-message")
    _, p = key.resolve_params("MAYO-2")
    fixed = [_draw(key, p, True, 1) for _ in range(3)]
    random = [_draw(key, p, False, s) for s in range(10)]
    assert len({f[1] for f in fixed}) == 1
    assert all(r[1] != fixed[0][1] for r in random)        # the random class never uses the fixed key
    for args in fixed[:1] + random[:2] + [_draw(message, p, True, 1), _draw(message, p, False, 2)]:
        assert mayo.verify(*args)
    assert _draw(message, p, True, 1)[2] == _draw(message, p, True, 1)[2]


def test_mceliece_malformed_ciphertexts_are_rejected():
    mceliece = pytest.importorskip("pqforge.mceliece")
    from pqforge.ct import targets
    t = registry.get("mceliece-decap-validity")
    _, p = t.resolve_params(None)
    sk, cts = targets._mce_pool(p)[0]
    known = {ct: ss for ct, ss in cts}
    valid = _draw(t, p, False, 1)
    assert mceliece.decapsulate(*valid) == known[valid[2]]
    bad = _draw(t, p, True, 1)
    assert bad[2] not in known and len(bad[2]) == len(valid[2])
    assert mceliece.decapsulate(*bad) not in known.values()   # implicit rejection
    k = registry.get("mceliece-decap-key")
    assert _draw(k, p, True, 1)[1] == sk and _draw(k, p, False, 2)[1] != sk
