"""GF(16) = GF(2)[x]/(x^4 + x + 1).

Elements are integers 0..15 (bit i is the coefficient of x^i). Vectors of field elements live in
two forms: the specification's nibble strings (two elements per byte, the first in the low
nibble), used only where bytes enter or leave, and the bitsliced form used everywhere inside: a
vector of length ``m`` is four bit planes of ``ceil(m/64)`` 64-bit words, plane ``p`` holding bit
``p`` of every element.
"""

from .encoding import (bitslice, decode_nibbles, encode_nibbles, unbitslice)
from .kernels import gf16_inv, gf16_mul

__all__ = ["bitslice", "decode_nibbles", "encode_nibbles", "unbitslice", "gf16_inv", "gf16_mul"]
