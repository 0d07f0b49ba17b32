"""MAYO signatures (NIST additional-signature candidate, Round 2 parameter sets).

    from pqforge.mayo import MAYO2
    sk = MAYO2.generate_private_key()
    sig = sk.sign(b"data")
    sk.public_key().verify(sig, b"data")

Sizes (bytes, compact sk / pk / signature): MAYO-1 24 / 1420 / 454, MAYO-2 24 / 4912 / 186,
MAYO-3 32 / 2986 / 681, MAYO-5 40 / 5554 / 964.
"""

from ..algorithms import lookup
from .api import expand_pk, expand_sk, keypair, open_nist, sign, sign_nist, verify
from .batch import get_default_backend, set_default_backend, sign_many, verify_many
from .keys import MayoAlgorithm, MayoPrivateKey, MayoPublicKey
from .params import MAYO_1, MAYO_2, MAYO_3, MAYO_5, ROUND2, MayoParams

MAYO1 = MayoAlgorithm(MAYO_1)
MAYO2 = MayoAlgorithm(MAYO_2)
MAYO3 = MayoAlgorithm(MAYO_3)
MAYO5 = MayoAlgorithm(MAYO_5)

ALGORITHMS = {alg.name: alg for alg in (MAYO1, MAYO2, MAYO3, MAYO5)}


def get(name: str) -> MayoAlgorithm:
    """The MAYO algorithm called ``name`` ("MAYO-2"; also "mayo-2", "MAYO2")."""
    alg: MayoAlgorithm = lookup(ALGORITHMS, name, "MAYO algorithm")
    return alg


__all__ = ["MAYO1", "MAYO2", "MAYO3", "MAYO5", "ALGORITHMS", "get", "keypair", "sign", "verify",
           "sign_nist", "open_nist", "expand_sk", "expand_pk", "MayoAlgorithm", "MayoPrivateKey",
           "MayoPublicKey", "MayoParams", "sign_many", "verify_many", "set_default_backend",
           "get_default_backend", "MAYO_1", "MAYO_2", "MAYO_3", "MAYO_5", "ROUND2"]
