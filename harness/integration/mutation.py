"""The byte strings a guided fuzz loop feeds a hypothesis test (`harness.integration.guided`).

Hypothesis reads a fuzz input from the front: each choice a strategy makes (a boolean, an
integer in a range, whether a list goes on) takes the next few bytes.  So a kept input's first
bytes are the choices that led where it went, and what follows decides what it does after.  The
mutations are libFuzzer's and AFL's, with that shape in mind: most keep a prefix and change what
comes after it (a different next choice, the rest drawn anew), some change a few bytes in place
(one choice made differently, the rest as before), some splice two inputs (one's start, the
other's end).  Every input gets a random tail: an input whose changed choices ask for more bytes
than it had would otherwise stop short (hypothesis calls that an overrun, and runs nothing).
"""

from __future__ import annotations

import random

__all__ = ["FRESH_BYTES", "TAIL_BYTES", "fresh_input", "mutated_input"]

FRESH_BYTES = 4096  # a fresh input: more than most tests draw
TAIL_BYTES = 1024  # random bytes after a mutated input
_INTERESTING = (0x00, 0x01, 0x7F, 0x80, 0xFF)


def fresh_input(rng: random.Random) -> bytes:
    """An input of random bytes: what a blind fuzzer runs, every time."""
    return rng.randbytes(FRESH_BYTES)


def mutated_input(rng: random.Random, data: bytes, other: bytes) -> bytes:
    """``data`` changed by one to four stacked mutations (``other``: another kept input, for
    splicing), with a random tail."""
    buffer = bytearray(data or b"\x00")
    for _ in range(rng.choice((1, 1, 2, 3, 4))):
        _MUTATIONS[rng.randrange(len(_MUTATIONS))](rng, buffer, other)
        if not buffer:
            buffer.append(0)
    return bytes(buffer) + rng.randbytes(TAIL_BYTES)


def _position(rng: random.Random, buffer: bytearray) -> int:
    """A position, nearer the end more often: the last choices are the ones least explored."""
    n = len(buffer)
    return n - 1 - min(int(rng.expovariate(4.0 / n)), n - 1) if rng.random() < 0.5 else rng.randrange(n)


def _new_suffix(rng: random.Random, buffer: bytearray, other: bytes) -> None:
    """Keep the choices up to a point; everything after it is drawn anew."""
    del buffer[_position(rng, buffer):]


def _flip_bit(rng: random.Random, buffer: bytearray, other: bytes) -> None:
    buffer[rng.randrange(len(buffer))] ^= 1 << rng.randrange(8)


def _random_byte(rng: random.Random, buffer: bytearray, other: bytes) -> None:
    buffer[_position(rng, buffer)] = rng.randrange(256)


def _interesting_byte(rng: random.Random, buffer: bytearray, other: bytes) -> None:
    buffer[_position(rng, buffer)] = rng.choice(_INTERESTING)


def _add_to_byte(rng: random.Random, buffer: bytearray, other: bytes) -> None:
    i = _position(rng, buffer)
    buffer[i] = (buffer[i] + rng.choice((-4, -3, -2, -1, 1, 2, 3, 4))) % 256


def _delete_run(rng: random.Random, buffer: bytearray, other: bytes) -> None:
    i = rng.randrange(len(buffer))
    del buffer[i:i + rng.randint(1, 16)]


def _insert_run(rng: random.Random, buffer: bytearray, other: bytes) -> None:
    i = rng.randrange(len(buffer) + 1)
    buffer[i:i] = rng.randbytes(rng.randint(1, 16))


def _copy_run(rng: random.Random, buffer: bytearray, other: bytes) -> None:
    """A run of bytes repeated elsewhere: a choice sequence made twice (another list element
    like one before it)."""
    n = rng.randint(1, 32)
    source = rng.randrange(len(buffer))
    chunk = buffer[source:source + n]
    i = rng.randrange(len(buffer) + 1)
    buffer[i:i] = chunk


def _zero_run(rng: random.Random, buffer: bytearray, other: bytes) -> None:
    """Zeros are hypothesis' simplest choices: a smaller value, a shorter list."""
    i = rng.randrange(len(buffer))
    n = rng.randint(1, 8)
    buffer[i:i + n] = bytes(len(buffer[i:i + n]))


def _splice(rng: random.Random, buffer: bytearray, other: bytes) -> None:
    if not other:
        return _new_suffix(rng, buffer, other)
    cut = rng.randrange(len(buffer))
    buffer[cut:] = other[min(cut, len(other) - 1):] if rng.random() < 0.5 else other[rng.randrange(len(other)):]


_MUTATIONS = (_new_suffix, _new_suffix, _new_suffix, _flip_bit, _random_byte, _interesting_byte, _interesting_byte,
              _add_to_byte, _delete_run, _insert_run, _copy_run, _zero_run, _splice)
