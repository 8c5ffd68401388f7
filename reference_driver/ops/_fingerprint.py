"""FarmHash's 64-bit fingerprint (``Fingerprint64``, the "na" variant of FarmHash, by Geoff Pike).

LSH_PROJECTION hashes each input item with it, so a driver's projection bits are comparable
with the reference's only when both use this exact function.  Written out here from the
algorithm (byte strings read as little-endian 64- and 32-bit words, every sum and product
modulo 2**64), because numpy has no such hash and the harness takes no native dependency for one
operation.
"""

from __future__ import annotations

_MASK = (1 << 64) - 1
_K0 = 0xC3A5C85C97CB3127
_K1 = 0xB492B66FBE98F273
_K2 = 0x9AE16A3B2F90404F


def _word(data: bytes, at: int) -> int:
    return int.from_bytes(data[at:at + 8], "little")


def _half_word(data: bytes, at: int) -> int:
    return int.from_bytes(data[at:at + 4], "little")


def _rotate(value: int, shift: int) -> int:
    """Rotate right by ``shift`` bits (0 < shift < 64)."""
    return ((value >> shift) | (value << (64 - shift))) & _MASK


def _shift_mix(value: int) -> int:
    return value ^ (value >> 47)


def _mix16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & _MASK
    a ^= a >> 47
    b = ((v ^ a) * mul) & _MASK
    b ^= b >> 47
    return (b * mul) & _MASK


def _up_to_16(s: bytes) -> int:
    n = len(s)
    if n >= 8:
        mul = (_K2 + n * 2) & _MASK
        a = (_word(s, 0) + _K2) & _MASK
        b = _word(s, n - 8)
        c = (_rotate(b, 37) * mul + a) & _MASK
        d = ((_rotate(a, 25) + b) * mul) & _MASK
        return _mix16(c, d, mul)
    if n >= 4:
        mul = (_K2 + n * 2) & _MASK
        return _mix16((n + (_half_word(s, 0) << 3)) & _MASK, _half_word(s, n - 4), mul)
    if n > 0:
        y = (s[0] + (s[n >> 1] << 8)) & 0xFFFFFFFF
        z = (n + (s[n - 1] << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _MASK) * _K2) & _MASK
    return _K2


def _up_to_32(s: bytes) -> int:
    n = len(s)
    mul = (_K2 + n * 2) & _MASK
    a = (_word(s, 0) * _K1) & _MASK
    b = _word(s, 8)
    c = (_word(s, n - 8) * mul) & _MASK
    d = (_word(s, n - 16) * _K2) & _MASK
    return _mix16((_rotate((a + b) & _MASK, 43) + _rotate(c, 30) + d) & _MASK,
                  (a + _rotate((b + _K2) & _MASK, 18) + c) & _MASK, mul)


def _up_to_64(s: bytes) -> int:
    n = len(s)
    mul = (_K2 + n * 2) & _MASK
    a = (_word(s, 0) * _K2) & _MASK
    b = _word(s, 8)
    c = (_word(s, n - 8) * mul) & _MASK
    d = (_word(s, n - 16) * _K2) & _MASK
    y = (_rotate((a + b) & _MASK, 43) + _rotate(c, 30) + d) & _MASK
    z = _mix16(y, (a + _rotate((b + _K2) & _MASK, 18) + c) & _MASK, mul)
    e = (_word(s, 16) * mul) & _MASK
    f = _word(s, 24)
    g = ((y + _word(s, n - 32)) * mul) & _MASK
    h = ((z + _word(s, n - 24)) * mul) & _MASK
    return _mix16((_rotate((e + f) & _MASK, 43) + _rotate(g, 30) + h) & _MASK,
                  (e + _rotate((f + a) & _MASK, 18) + g) & _MASK, mul)


def _weak_pair(s: bytes, at: int, a: int, b: int) -> tuple[int, int]:
    """Two words of state from the 32 bytes at ``at`` and two seeds."""
    w, x, y, z = (_word(s, at + 8 * k) for k in range(4))
    a = (a + w) & _MASK
    b = _rotate((b + a + z) & _MASK, 21)
    c = a
    a = (a + x + y) & _MASK
    b = (b + _rotate(a, 44)) & _MASK
    return (a + z) & _MASK, (b + c) & _MASK


def _long(s: bytes) -> int:
    """More than 64 bytes: 64-byte blocks through 56 bytes of state, the last 64 bytes once more."""
    n = len(s)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & _MASK
    z = (_shift_mix((y * _K2 + 113) & _MASK) * _K2) & _MASK
    v = (0, 0)
    w = (0, 0)
    x = (x * _K2 + _word(s, 0)) & _MASK
    end = ((n - 1) // 64) * 64
    at = 0
    while True:
        x = (_rotate((x + y + v[0] + _word(s, at + 8)) & _MASK, 37) * _K1) & _MASK
        y = (_rotate((y + v[1] + _word(s, at + 48)) & _MASK, 42) * _K1) & _MASK
        x ^= w[1]
        y = (y + v[0] + _word(s, at + 40)) & _MASK
        z = (_rotate((z + w[0]) & _MASK, 33) * _K1) & _MASK
        v = _weak_pair(s, at, (v[1] * _K1) & _MASK, (x + w[0]) & _MASK)
        w = _weak_pair(s, at + 32, (z + w[1]) & _MASK, (y + _word(s, at + 16)) & _MASK)
        z, x = x, z
        at += 64
        if at == end:
            break
    mul = (_K1 + ((z & 0xFF) << 1)) & _MASK
    at = n - 64
    w0 = (w[0] + ((n - 1) & 63)) & _MASK
    v0 = (v[0] + w0) & _MASK
    w0 = (w0 + v0) & _MASK
    v, w = (v0, v[1]), (w0, w[1])
    x = (_rotate((x + y + v[0] + _word(s, at + 8)) & _MASK, 37) * mul) & _MASK
    y = (_rotate((y + v[1] + _word(s, at + 48)) & _MASK, 42) * mul) & _MASK
    x ^= (w[1] * 9) & _MASK
    y = (y + v[0] * 9 + _word(s, at + 40)) & _MASK
    z = (_rotate((z + w[0]) & _MASK, 33) * mul) & _MASK
    v = _weak_pair(s, at, (v[1] * mul) & _MASK, (x + w[0]) & _MASK)
    w = _weak_pair(s, at + 32, (z + w[1]) & _MASK, (y + _word(s, at + 16)) & _MASK)
    z, x = x, z
    return _mix16((_mix16(v[0], w[0], mul) + _shift_mix(y) * _K0 + z) & _MASK,
                  (_mix16(v[1], w[1], mul) + x) & _MASK, mul)


def fingerprint64(data: bytes) -> int:
    """The unsigned 64-bit fingerprint of ``data``."""
    n = len(data)
    if n <= 16:
        return _up_to_16(data)
    if n <= 32:
        return _up_to_32(data)
    if n <= 64:
        return _up_to_64(data)
    return _long(data)


def signed(value: int) -> int:
    """The fingerprint read as a two's-complement int64, as LSH_PROJECTION sums it."""
    return value - (1 << 64) if value >= 1 << 63 else value
