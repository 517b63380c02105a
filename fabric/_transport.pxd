# C layout of the outlets, used when setup.py compiles _transport.py (an "augmenting
# .pxd": the .py stays the one source). An outlet's fields become C struct members, so
# the per-message send reads them without attribute lookups; values keep Python types.
import cython

cdef class Outlet:
    cdef readonly object node
    cdef list _targets, _stamp, _load
    cdef object _park, _clock, _pack

    @cython.locals(target=tuple, stamp=list)
    cpdef send(self, object port, object message, object size=*)

cdef class TimedOutlet(Outlet):
    cdef object _q
    cdef list _busy
    cdef object _later
