"""A node's compact random stream: Philox4x32-10, counter-based (``--rng philox``).

Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2,
3", SC 2011) maps a 128-bit counter and a 64-bit key to 128 random bits in ten rounds of
two 32-bit multiplications each. A node's stream is the sequence of 32-bit words

    word i = word (i mod 4) of Philox4x32-10(counter, key),
    counter = (b mod 2**32, b // 2**32, node, incarnation) with b = i // 4 (the block),

``key`` being the run's (two 32-bit words derived from its seed: ``slotnet.nodes._rng``).
The node and its incarnation sit in the counter, so every node's stream is its own by
construction, and the only state a node keeps is the index of its next word (as the next
block and the words of the last one used, kept so as not to compute a block four times):
a few C integers where ``random.Random`` keeps 2.5 KiB of Mersenne Twister state. The
stream has 2**66 words (then it starts again).

The draws take words from that sequence, in order:

* ``random()``: two words a, b; ``((a >> 5) * 2**26 + (b >> 6)) / 2**53``, the way
  CPython's ``random()`` builds its float from two of its words;
* ``getrandbits(k)``: ``ceil(k / 32)`` words, the first the least significant, the last
  shifted right to keep its top ``k mod 32`` bits (all 32 where ``k`` is a multiple of 32),
  as CPython's ``getrandbits``; ``k = 0`` takes none;
* ``_randbelow(n)``: ``getrandbits(n.bit_length())`` until it is below ``n`` (CPython's
  ``_randbelow_with_getrandbits``);
* everything else (``randrange``, ``randint``, ``choice``, ``shuffle``, ``sample``,
  ``choices``, ``uniform``, ``gauss``, ``expovariate``, ...) is ``random.Random``'s own
  Python method, run on this stream's ``random``, ``getrandbits`` and ``_randbelow``.

When slotnet is installed with a C compiler this module is compiled (``slotnet/_build.py``;
the C types are in ``_philox.pxd``), so a word costs C arithmetic; the pure-Python source
gives the same bits (``tests/unit/nodes/test_philox.py``).
"""

from __future__ import annotations

import random as _random
from typing import Any

__all__ = ["PhiloxStream", "philox4x32_10", "stream_of"]

#: The algorithm's constants: the round multipliers and the key schedule's Weyl increments
#: (Random123's PHILOX_M4x32_0/1 and PHILOX_W32_0/1), and the masks of 32 and 64 bits. The
#: compiled module holds them as C integers (``_philox.pxd``): a literal above 2**31 would
#: be a Python int there, and every round Python arithmetic.
MUL0 = 0xD2511F53
MUL1 = 0xCD9E8D57
WEYL0 = 0x9E3779B9
WEYL1 = 0xBB67AE85
M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF


def _check(k0: int, k1: int, node: int, incarnation: int) -> None:
    """Refuse a key word, node or incarnation outside [0, 2**32)."""
    for name, value in (("key word", k0), ("key word", k1), ("node", node), ("incarnation", incarnation)):
        if not (isinstance(value, int) and 0 <= value <= 0xFFFFFFFF):
            raise ValueError(f"a philox stream's {name} must be an int in [0, 2**32), got {value!r}")


def philox4x32_10(c0: int, c1: int, c2: int, c3: int, k0: int, k1: int) -> tuple[int, int, int, int]:
    """Philox4x32-10 of the counter ``(c0, c1, c2, c3)`` under the key ``(k0, k1)`` (32-bit words).

    Example:
        >>> [f"{w:08x}" for w in philox4x32_10(0, 0, 0, 0, 0, 0)]  # Random123's known answer
        ['6627e8d5', 'e169c58d', 'bc57ac4c', '9b00dbd8']
    """
    s = PhiloxStream((k0, k1), c2, c3)  # the stream's own rounds: its counter is (block, node, incarnation)
    s._fill(c0 | c1 << 32)
    return s._b0, s._b1, s._b2, s._b3


def _borrow(name: str) -> Any:
    """``random.Random``'s Python method ``name`` (a plain function: bound to whatever class holds it)."""
    return _random.Random.__dict__[name]


class PhiloxStream:
    """One node's stream (see the module's docstring): the methods of ``random.Random``
    that a scheme draws with, on Philox4x32-10 words instead of the Mersenne Twister's.

    Not a subclass of ``random.Random`` (that would carry the Twister's state along); it
    satisfies :class:`slotnet.nodes.NodeStream`, as ``random.Random`` does. The stream is
    fixed by the run: ``seed`` refuses.

    Args:
        key: the run's key, two 32-bit words (``slotnet.nodes._rng.philox_key``).
        node: the node (below 2**32).
        incarnation: how often the node was restarted before (below 2**32).
    """

    __slots__ = ("_k0", "_k1", "_node", "_incarnation", "_block", "_pos", "_b0", "_b1", "_b2", "_b3", "_gauss", "_has_gauss")

    def __init__(self, key: tuple[int, int], node: int, incarnation: int = 0) -> None:
        k0, k1 = key
        _check(k0, k1, node, incarnation)
        self._k0 = k0
        self._k1 = k1
        self._node = node
        self._incarnation = incarnation
        #: the next block to compute (below 2**64), and how many words of the one before it
        #: (``_b0.._b3``) are used: 4, all of them (or none computed yet)
        self._block = 0
        self._pos = 4
        self._b0 = self._b1 = self._b2 = self._b3 = 0
        #: ``random.Random.gauss``'s spare draw, where it has one (:attr:`gauss_next`): a C double
        #: and a flag, not an object, so that the stream holds no reference (the collector never tracks it)
        self._gauss = 0.0
        self._has_gauss = False

    # -- the words ----------------------------------------------------------------------
    def _fill(self, block: int) -> None:
        """Compute block ``block`` of this node's words into ``_b0.._b3``."""
        c0 = block & M32
        c1 = (block >> 32) & M32
        c2 = self._node
        c3 = self._incarnation
        k0 = self._k0
        k1 = self._k1
        for r in range(10):
            if r:
                k0 = (k0 + WEYL0) & M32
                k1 = (k1 + WEYL1) & M32
            p0 = MUL0 * c0
            p1 = MUL1 * c2
            c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & M32, (p0 >> 32) ^ c3 ^ k1, p0 & M32)
        self._b0 = c0
        self._b1 = c1
        self._b2 = c2
        self._b3 = c3

    def _word(self) -> int:
        """The next 32-bit word of the stream."""
        j = self._pos
        if j == 4:
            self._fill(self._block)
            self._block = (self._block + 1) & M64
            j = 0
        self._pos = j + 1
        if j == 0:
            return self._b0
        if j == 1:
            return self._b1
        if j == 2:
            return self._b2
        return self._b3

    # -- the draws ----------------------------------------------------------------------
    def random(self) -> float:
        """A float in [0, 1): 53 bits from the next two words."""
        a = self._word() >> 5
        b = self._word() >> 6
        return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)

    def getrandbits(self, k: int) -> int:
        """An int of ``k`` random bits (``ceil(k / 32)`` words, the first the least significant)."""
        if not isinstance(k, int):
            raise TypeError(f"getrandbits takes an int number of bits, got {type(k).__name__}")
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        n = k
        if n <= 32:
            if n == 0:
                return 0
            return self._word() >> (32 - n)
        result = 0
        shift = 0
        while n > 32:
            w = self._word()  # a Python int (w is an object in the compiled module too)
            result |= w << shift
            shift += 32
            n -= 32
        w = self._word() >> (32 - n)
        return result | w << shift

    def _randbelow(self, n: int) -> int:
        """An int in [0, n): ``getrandbits(n.bit_length())`` until it is below ``n``."""
        if n <= 0:
            raise ValueError(f"_randbelow needs n > 0, got {n!r}")
        k = n.bit_length()
        if k <= 32:  # one word a try
            m = n
            r = self._word() >> (32 - k)
            while r >= m:
                r = self._word() >> (32 - k)
            return r
        x = self.getrandbits(k)
        while x >= n:
            x = self.getrandbits(k)
        return x

    def randbytes(self, n: int) -> bytes:
        """``n`` random bytes (``getrandbits(8 n)``, little-endian, as ``random.Random.randbytes``)."""
        return self.getrandbits(n * 8).to_bytes(n, "little")

    # random.Random's methods in Python, on this stream's random(), getrandbits() and _randbelow()
    randrange = _borrow("randrange")
    randint = _borrow("randint")
    choice = _borrow("choice")
    shuffle = _borrow("shuffle")
    sample = _borrow("sample")
    choices = _borrow("choices")
    uniform = _borrow("uniform")
    triangular = _borrow("triangular")
    normalvariate = _borrow("normalvariate")
    gauss = _borrow("gauss")
    lognormvariate = _borrow("lognormvariate")
    expovariate = _borrow("expovariate")
    vonmisesvariate = _borrow("vonmisesvariate")
    gammavariate = _borrow("gammavariate")
    betavariate = _borrow("betavariate")
    paretovariate = _borrow("paretovariate")
    weibullvariate = _borrow("weibullvariate")

    # -- state ----------------------------------------------------------------------------
    def seed(self, *args: Any, **kwargs: Any) -> None:
        """Refused: a node's philox stream is fixed by the run's seed, its node and incarnation."""
        raise TypeError("a node's philox stream cannot be reseeded: the run's seed, the node and its "
                        "incarnation fix it (draw from ctx.rng as it is, or make a random.Random of your own)")

    def getstate(self) -> tuple[Any, ...]:
        """``("philox4x32-10", key, node, incarnation, next word, gauss_next)``: what :meth:`setstate` restores."""
        return ("philox4x32-10", (self._k0, self._k1), self._node, self._incarnation, self.words_drawn, self.gauss_next)

    def setstate(self, state: tuple[Any, ...]) -> None:
        """Restore what :meth:`getstate` returned (of this stream or another node's)."""
        if not (isinstance(state, tuple) and len(state) == 6 and state[0] == "philox4x32-10"):
            raise ValueError(f"not a philox stream's state: {state!r:.80}")
        _, (k0, k1), node, incarnation, index, gauss_next = state
        _check(k0, k1, node, incarnation)
        if not (isinstance(index, int) and 0 <= index < 1 << 66):
            raise ValueError(f"a philox stream's word index must be an int in [0, 2**66), got {index!r}")
        self._k0 = k0
        self._k1 = k1
        self._node = node
        self._incarnation = incarnation
        block = index >> 2
        if index & 3:
            self._fill(block)
            self._block = (block + 1) & M64
            self._pos = index & 3
        else:
            self._block = block
            self._pos = 4
        self.gauss_next = gauss_next

    @property
    def gauss_next(self) -> float | None:
        """``random.Random.gauss``'s spare normal draw (that method reads and writes it); None: none kept."""
        return self._gauss if self._has_gauss else None

    @gauss_next.setter
    def gauss_next(self, value: float | None) -> None:
        if value is None:
            self._has_gauss = False
        else:
            self._gauss = value
            self._has_gauss = True

    @property
    def words_drawn(self) -> int:
        """How many 32-bit words the stream has handed out so far (modulo 2**66, its period)."""
        block = self._block  # a Python int in the compiled module too (an inferred local is never a C integer)
        return (4 * block + self._pos - 4) % (1 << 66)

    def __repr__(self) -> str:
        return f"<PhiloxStream node {self._node} incarnation {self._incarnation}, {self.words_drawn} words drawn>"


def stream_of(rand: Any) -> PhiloxStream | None:
    """The philox stream whose ``random`` ``rand`` is (a bound method of it), or None for any
    other source of draws. Compiled, a caller that holds the stream draws with a C call
    returning a C double, where calling ``rand`` is a Python call and a float object made
    and read: the same number either way."""
    stream = getattr(rand, "__self__", None)
    return stream if type(stream) is PhiloxStream else None
