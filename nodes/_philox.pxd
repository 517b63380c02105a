# C layout of a node's philox stream, used when setup.py compiles _philox.py (an
# "augmenting .pxd": the .py stays the one source). The key, node, incarnation and the
# cached block are 32-bit words, the next block below 2**64; a round's products of two
# 32-bit words fit in 64 bits, so the rounds are C arithmetic with the source's results.
# No field is an object: a stream is about 80 bytes and the collector never tracks it.
# A word and random() are C arithmetic that cannot fail: noexcept, so that no caller
# asks whether an exception is pending after each.
import cython

# the algorithm's constants and masks, as C integers (a literal above 2**31 is a Python int)
cdef unsigned long long MUL0, MUL1, WEYL0, WEYL1, M32, M64

cdef class PhiloxStream:
    # in this order, no padding: 16 bytes of words, 8 of small fields, 16 of the block, 16 of 64-bit fields
    cdef unsigned int _k0, _k1, _node, _incarnation
    cdef unsigned int _pos
    cdef bint _has_gauss
    cdef unsigned int _b0, _b1, _b2, _b3
    cdef unsigned long long _block
    cdef double _gauss

    @cython.locals(r=int, c0=cython.ulonglong, c1=cython.ulonglong, c2=cython.ulonglong, c3=cython.ulonglong,
                   k0=cython.ulonglong, k1=cython.ulonglong, p0=cython.ulonglong, p1=cython.ulonglong)
    cdef void _fill(self, unsigned long long block) noexcept

    @cython.locals(j=cython.uint)
    cdef unsigned int _word(self) noexcept

    @cython.locals(a=cython.ulonglong, b=cython.ulonglong)
    cpdef double random(self) noexcept

    @cython.locals(n=Py_ssize_t, shift=Py_ssize_t, result=object, w=object)
    cpdef object getrandbits(self, object k)

    @cython.locals(k=Py_ssize_t, m=cython.ulonglong, r=cython.ulonglong, x=object)
    cpdef object _randbelow(self, object n)

# the stream a bound ``random`` belongs to, for callers that draw from it in C
cpdef object stream_of(object rand)

@cython.locals(s=PhiloxStream)
cpdef tuple philox4x32_10(unsigned long long c0, unsigned long long c1, unsigned long long c2,
                          unsigned long long c3, unsigned long long k0, unsigned long long k1)
