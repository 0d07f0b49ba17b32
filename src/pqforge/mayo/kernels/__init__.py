"""MAYO's compiled kernels (numba, nopython, cached), along the specification's lines:

- ``products``: matrices of m-vectors times matrices of scalars (P1 O, v^T L, v^T P1 v);
- ``expansion``: key generation's P3 and the secret key's L from the keystream of P1 || P2;
- ``whipping``: the whipping of the pair products and the reduction modulo f (a unit, ``WHIP``);
- ``solve``: the echelon form and SampleSolution (a unit, ``SOLVE``);
- ``sign``: one attempt of the signing loop and the signature's assembly;
- ``verify``: the public map P*(s) and the comparison with the target;
- ``layout``: bit planes, element arrays and nibble strings at the byte boundary;
- ``encoded``: the products of the gfni and avx2 sets on the nibble encoding (``gf16.sets``);
- ``batch``: the CPU batch loops, a chunk of a batch per call without the GIL.

Layouts: an m-vector is bitsliced into ``W = 4 * limbs`` uint64 words (``pqforge.gf16``); a
matrix of m-vectors is an array (rows, cols, W), or, when upper triangular, packed as
(entries, W) with the entries (j, j..size-1) of each row j in turn; scalar matrices and vectors
are uint8 arrays of GF(16) elements. Each kernel's docstring says which arguments are secret.
Kernels that see secrets use masks only: loop bounds and memory indices depend on public sizes,
never on values. Every kernel keeps its plain-Python twin as ``kernel.py_func``.

The names below are the bit-plane (portable) set and the kernels every set shares.
"""

from .expansion import expand_secret_from_stream, public_key_from_stream
from .layout import (bitslice_into, decode_nibbles_into, encode_nibbles_into, encode_upper_into, equals_nibbles,
                     slots_to_bitsliced, unbitslice_into)
from .products import mul_packed_rows, mul_transposed, mul_transposed_packed, packed_row_starts, place_rows, quadratic_pairs
from .sign import assemble_signature, sign_attempt, sign_from_hashes, units, whip_and_solve
from .solve import SOLVE, sample_solution, sample_solution_bitsliced
from .verify import evaluate_public_sized, public_pairs, public_pairs_nibbles, verify_sized, verify_units
from .whipping import WHIP, whip, whip_bitsliced

__all__ = ["SOLVE", "WHIP", "assemble_signature", "bitslice_into", "decode_nibbles_into", "encode_nibbles_into",
           "encode_upper_into", "equals_nibbles", "evaluate_public_sized",
           "expand_secret_from_stream", "mul_packed_rows", "mul_transposed", "mul_transposed_packed",
           "packed_row_starts", "place_rows", "public_key_from_stream", "public_pairs", "public_pairs_nibbles",
           "quadratic_pairs", "sample_solution", "sample_solution_bitsliced", "sign_attempt", "sign_from_hashes",
           "slots_to_bitsliced",
           "unbitslice_into", "units", "verify_sized", "verify_units", "whip", "whip_and_solve", "whip_bitsliced"]
