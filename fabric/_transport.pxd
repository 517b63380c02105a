# C layout of the outlets, used when setup.py compiles _transport.py (an "augmenting
# .pxd": the .py stays the one source). An outlet's fields become C struct members, so
# the per-message send reads them without attribute lookups; the slot and the bit mask of
# the ports used in it are C integers (ports number below 64, slots below 2**63).
import cython
from cpython.bytearray cimport PyByteArray_Resize

cdef extern from "Python.h":
    # a bytearray's bytes, as unsigned char (PyByteArray_AS_STRING's are char)
    unsigned char* _bytes_of "(unsigned char *)PyByteArray_AS_STRING" (object)

@cython.locals(v="long long")
cdef Py_ssize_t _int_size(long long v)

@cython.locals(tag=int, width=Py_ssize_t, k=Py_ssize_t)
cdef Py_ssize_t _put_int(unsigned char* buf, Py_ssize_t at, long long v) except -1

@cython.locals(n=Py_ssize_t, size=Py_ssize_t, i=Py_ssize_t, at=Py_ssize_t, v="long long", x=object, t=tuple,
               out="unsigned char *")
cpdef bint _append_int_pair(bytearray buf, Py_ssize_t in_port, object message) except -1

cdef class OutletsShared:
    cdef public object park, clock, pack
    cdef public list pending, touched
    cdef public bint packed
    cdef public Py_ssize_t xor

cdef class Outlet:
    cdef readonly object node
    cdef long long _me
    cdef object _nbrs
    cdef tuple _revs
    cdef long long _slot
    cdef unsigned long long _used
    cdef list _load
    cdef OutletsShared _sh
    cdef object _follow, _report

    @cython.locals(slot="long long", p=Py_ssize_t, nb=Py_ssize_t, one="unsigned long long", bit="unsigned long long",
                   pending=list, pend=list, buf=bytearray, count=Py_ssize_t, follow=object, key=object,
                   sh=OutletsShared)
    cpdef send(self, object port, object message, object size=*)

cdef class TimedOutlet(Outlet):
    cdef object _q
    cdef list _busy
    cdef object _later

cdef class Frames:
    cdef readonly object receiver, slot
    cdef object _pend

@cython.locals(i=Py_ssize_t, r=Py_ssize_t, kept=Py_ssize_t, local=Py_ssize_t, taken=Py_ssize_t, n=Py_ssize_t, pend=object,
               buf=bytearray, box=list)
cpdef tuple take_remote(list pending, list touched, Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t block, Py_ssize_t shards)

@cython.locals(i=Py_ssize_t, r=Py_ssize_t, added=Py_ssize_t, n=Py_ssize_t, total=Py_ssize_t, pend=object, mine=object,
               theirs=bytes, buf=bytearray)
cpdef Py_ssize_t add_pairs(list pending, list touched, list pairs, Py_ssize_t lo, Py_ssize_t hi) except -1
