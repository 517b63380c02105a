# C layout of the arrival process, used when setup.py compiles _arrivals.py (an
# "augmenting .pxd": the .py stays the one source). A node draws its next arrival epoch
# once per slot with arrivals: the segment's fields are read as C struct members, not
# looked up by name. Only the log-probability is a C double (it is a Python float, a C
# double, already); slots and counts stay Python ints.
import cython

cdef class _Segment:
    cdef public object start, end
    cdef public double log_p0
    cdef public list cdf_pos

cdef class ArrivalProcess:
    cdef object _rand
    cdef public tuple _segs
    cdef public _Segment _only
    # the counts of arrivals per slot (one rate forever): slots, counts and the histogram
    # stay Python ints (a slot is unbounded); read by counts() at the end
    cdef public list hist
    cdef public object _from, _at, _count

    @cython.locals(only=_Segment, seg=_Segment, hist=list)
    cpdef next_after(self, object slot)
