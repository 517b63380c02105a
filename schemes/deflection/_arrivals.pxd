# C layout of the arrival process, used when setup.py compiles _arrivals.py (an
# "augmenting .pxd": the .py stays the one source). A node draws its next arrival epoch
# once per slot with arrivals: the segment's fields are read as C struct members, not
# looked up by name. Only the log-probability is a C double (it is a Python float, a C
# double, already); slots and counts stay Python ints.
import cython
from slotnet.nodes._philox cimport PhiloxStream, stream_of

cdef class _Segment:
    cdef public object start, end
    cdef public double log_p0
    cdef public list cdf_pos

cdef class ArrivalProcess:
    cdef object _rand
    cdef readonly PhiloxStream _ps
    cdef public tuple _segs
    cdef public _Segment _only
    # the counts of arrivals per slot (one rate forever), kept in C: slots (below 2**63,
    # -1 for none) and an arrival count (at most the pmf's length); read by counts() at the end
    cdef public list hist
    cdef public long long _first, _at, _count, _skipped

    @cython.locals(only=_Segment, seg=_Segment, hist=list, pend=cython.longlong, late=cython.longlong, ps=PhiloxStream)
    cpdef next_after(self, object slot)
