"""The compact node stream (``--rng philox``): Philox4x32-10 as Random123 defines it, the
word stream and the draws as ``nodes/_philox.py`` documents them, in either build."""

from __future__ import annotations

import gc
import importlib.machinery
import importlib.util
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet import _build
from slotnet.nodes import NodeStream
from slotnet.nodes._philox import PhiloxStream, philox4x32_10
from slotnet.nodes._rng import PhiloxStreams, node_rng, philox_key, run_streams

COMPILED = _build.build() == "compiled"

#: Random123's tests/kat_vectors, the three "philox4x32 10" lines: counter (4 words), key (2), result (4)
KAT = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
     (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF),
     (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]

U32 = st.integers(0, 2**32 - 1)


# -- a reference written from the paper and the docstring, independently of the module --------
def ref_philox(ctr: list[int], key: list[int]) -> list[int]:
    """Philox4x32-10 (Salmon et al., SC 2011) with lists and divmod."""
    for i in range(10):
        if i:
            key = [(key[0] + 0x9E3779B9) % 2**32, (key[1] + 0xBB67AE85) % 2**32]
        hi0, lo0 = divmod(0xD2511F53 * ctr[0], 2**32)
        hi1, lo1 = divmod(0xCD9E8D57 * ctr[2], 2**32)
        ctr = [hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0]
    return ctr


class RefStream(random.Random):
    """The documented word stream, with ``random.Random``'s own methods on its random() and
    getrandbits() (CPython then uses ``_randbelow_with_getrandbits``)."""

    def __init__(self, key: tuple[int, int], node: int, incarnation: int, index: int = 0) -> None:
        self.key, self.node, self.incarnation, self.index = list(key), node, incarnation, index
        super().__init__(0)  # the Twister's own state is never drawn from

    def word(self) -> int:
        block, j = divmod(self.index, 4)
        self.index += 1
        return ref_philox([block % 2**32, block // 2**32, self.node, self.incarnation], self.key)[j]

    def random(self) -> float:
        a, b = self.word() >> 5, self.word() >> 6
        return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)

    def getrandbits(self, k: int) -> int:
        value = 0
        for i in range(-(-k // 32)):
            bits = min(32, k - 32 * i)
            value |= (self.word() >> (32 - bits)) << (32 * i)
        return value


def at(key: tuple[int, int], node: int, incarnation: int, index: int, cls: Any = PhiloxStream) -> Any:
    """A stream of ``cls`` at word ``index``."""
    if cls is RefStream:
        return RefStream(key, node, incarnation, index)
    s = cls(key, node, incarnation)
    s.setstate(("philox4x32-10", key, node, incarnation, index, None))
    return s


#: (name, strategy of its arguments): the draws compared, the population ones on small lists
OPS = st.one_of(
    st.tuples(st.just("random"), st.just(())),
    st.tuples(st.just("getrandbits"), st.tuples(st.integers(0, 200))),
    st.tuples(st.just("randrange"), st.tuples(st.integers(1, 2**70))),
    st.tuples(st.just("randrange"), st.tuples(st.integers(-50, 0), st.integers(1, 50), st.integers(1, 7))),
    st.tuples(st.just("randint"), st.tuples(st.integers(-5, 5), st.integers(5, 2**40))),
    st.tuples(st.just("choice"), st.tuples(st.lists(st.integers(), min_size=1, max_size=9))),
    st.tuples(st.just("shuffle"), st.tuples(st.lists(st.integers(), max_size=12))),
    st.tuples(st.just("sample"), st.integers(0, 12).flatmap(lambda n: st.tuples(st.just(list(range(n))),
                                                                                  st.integers(0, n)))),
    st.tuples(st.just("choices"), st.tuples(st.lists(st.integers(), min_size=1, max_size=9))),
    st.tuples(st.just("uniform"), st.tuples(st.floats(-10, 10), st.floats(-10, 10))),
    st.tuples(st.just("gauss"), st.just(())),
    st.tuples(st.just("normalvariate"), st.just(())),
    st.tuples(st.just("expovariate"), st.tuples(st.floats(0.1, 10))),
    st.tuples(st.just("randbytes"), st.tuples(st.integers(0, 20))),
)


def draw_all(stream: Any, ops: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
    out = []
    for name, args in ops:
        if name == "shuffle":
            items = list(args[0])
            stream.shuffle(items)
            out.append(items)
        elif name == "choices":
            out.append(stream.choices(args[0], k=3))
        else:
            out.append(getattr(stream, name)(*args))
    return out


# -- tests -------------------------------------------------------------------------------
@pytest.mark.parametrize("ctr, key, expected", KAT)
def test_known_answers(ctr, key, expected):
    """Philox4x32-10 gives Random123's known answers, and the stream's block (b, node,
    incarnation) is that counter: words 4b..4b+3 of the node's stream are the answer."""
    assert philox4x32_10(*ctr, *key) == expected
    assert tuple(ref_philox(list(ctr), list(key))) == expected
    s = at(key, ctr[2], ctr[3], 4 * (ctr[1] << 32 | ctr[0]))
    assert tuple(s.getrandbits(32) for _ in range(4)) == expected


@settings(max_examples=60, deadline=None)
@given(key=st.tuples(U32, U32), node=U32, incarnation=U32,
       index=st.one_of(st.integers(0, 9), st.integers(4 * 2**32 - 6, 4 * 2**32 + 6), st.integers(0, 2**66 - 2**16)),
       ops=st.lists(OPS, max_size=12))
def test_draws_equal_the_reference(key, node, incarnation, index, ops):
    """Every draw (random, getrandbits, randrange, choice, shuffle, sample, gauss, ...) from any
    word, the high half of the block counter included, equals the reference built from the
    documented word stream and random.Random's own methods; both take the same words."""
    mine, ref = at(key, node, incarnation, index), at(key, node, incarnation, index, RefStream)
    assert draw_all(mine, ops) == draw_all(ref, ops)
    assert mine.words_drawn == ref.index


def test_the_state_is_the_word_index():
    """getstate/setstate carry the stream: a stream restored draws what the original draws next."""
    s = PhiloxStream((1, 2), 3, 4)
    s.random()
    s.getrandbits(7)
    s.gauss()  # keeps its spare draw
    state = s.getstate()
    assert state[4] == 7 and state[5] is not None
    t = PhiloxStream((9, 9), 0)
    t.setstate(state)
    assert [t.gauss() for _ in range(3)] + [t.random()] == [s.gauss() for _ in range(3)] + [s.random()]


def test_a_stream_cannot_be_reseeded_or_misbuilt():
    """seed() is refused (the run fixes the stream); words outside 32 bits and foreign states are refused."""
    s = PhiloxStream((0, 0), 0)
    with pytest.raises(TypeError, match="cannot be reseeded"):
        s.seed(1)
    for bad in (((2**32, 0), 0, 0), ((0, 0), -1, 0), ((0, 0), 0, 2**32)):
        with pytest.raises(ValueError, match=r"in \[0, 2\*\*32\)"):
            PhiloxStream(*bad)
    with pytest.raises(ValueError, match="not a philox stream's state"):
        s.setstate(random.Random(1).getstate())
    with pytest.raises(ValueError, match="must be non-negative"):
        s.getrandbits(-1)
    with pytest.raises(ValueError, match="empty range"):
        s.randrange(0)


def test_nodes_incarnations_and_seeds_have_their_own_streams():
    """A run's streams: one key from the seed, the node and incarnation in the counter; other
    seeds give other keys. The first words are pinned: they are the documented stream."""
    streams = run_streams(1, "philox")
    assert isinstance(streams, PhiloxStreams) and streams.key == philox_key(1)
    firsts = {(v, i): node_rng(streams, v, i).getrandbits(32) for v in range(8) for i in range(3)}
    assert len(set(firsts.values())) == len(firsts)
    assert node_rng(streams, 5, 1).getstate() == PhiloxStream(philox_key(1), 5, 1).getstate()
    assert len({philox_key(s) for s in range(50)}) == 50
    assert philox_key(1) == (0xA0B921FC, 0x2E6F9851)
    assert node_rng(streams, 5, 0).getrandbits(32) == 0x01FDC674


def test_run_streams_refuses_an_unknown_generator():
    """A generator name other than mt or philox is refused, naming both."""
    with pytest.raises(ValueError, match="'mt', 'philox'"):
        run_streams(1, "pcg")


def test_both_generators_have_every_method_of_the_contract():
    """random.Random and the philox stream both offer every method NodeStream names."""
    names = [n for n, v in vars(NodeStream).items() if callable(v) and not n.startswith("_")]
    assert {"random", "getrandbits", "randrange", "choice", "shuffle", "sample"} <= set(names)
    for cls in (random.Random, PhiloxStream):
        assert all(callable(getattr(cls, n, None)) for n in names), cls


@pytest.mark.skipif(not COMPILED, reason="the hot path is not compiled here (no C compiler at install)")
def test_the_compiled_stream_is_the_source_and_small():
    """The compiled module draws the source's bits, with its constants C integers (not module
    attributes: the rounds are C arithmetic, not Python ints'); a node's stream is under 100
    bytes and holds no object (the collector does not track it)."""
    source = Path(sys.modules[PhiloxStream.__module__].__file__).with_name("_philox.py")
    spec = importlib.util.spec_from_file_location("slotnet.nodes._pure_philox", source)
    assert spec is not None and spec.loader is not None
    pure = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pure)
    compiled = sys.modules[PhiloxStream.__module__]
    assert isinstance(compiled.__loader__, importlib.machinery.ExtensionFileLoader)
    names = ("MUL0", "MUL1", "WEYL0", "WEYL1", "M32", "M64")
    assert not any(hasattr(compiled, n) for n in names) and all(type(getattr(pure, n)) is int for n in names)
    rnd = random.Random(7)
    for _ in range(30):
        args = (rnd.getrandbits(32), rnd.getrandbits(32)), rnd.getrandbits(32), rnd.getrandbits(32)
        index = rnd.getrandbits(64)
        a, b = at(*args, index), at(*args, index, pure.PhiloxStream)
        ops = [("random", ()), ("getrandbits", (rnd.randrange(300),)), ("randrange", (rnd.randrange(1, 2**40),)),
               ("gauss", ()), ("getrandbits", (32,))]
        assert draw_all(a, ops) == draw_all(b, ops)
    small = PhiloxStream((1, 2), 3)
    small.gauss()
    assert sys.getsizeof(small) < 100 and not gc.is_tracked(small)
