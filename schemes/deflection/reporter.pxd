# C types for StepSums, used when setup.py compiles reporter.py (an "augmenting .pxd":
# the .py stays the one source). The counts are 64-bit C integers; the delay sums stay
# Python ints. See StepSums' docstring for why.
import cython

cdef class StepSums:
    cdef public long long warmup
    cdef public bint queueing
    cdef public long long created, offered_total, absorbed_total, backlog
    cdef public long long offered, accepted, sent, deflected, absorbed, slot_absorbed
    cdef public object delay_sum, delay_sq, qdelay_sum, qdelay_sq, slot_delay, qwait_early
    cdef public list hist, series
    cdef public list node_accepted, node_absorbed, node_sent, node_deflected, queue
    cdef public object paths
    cdef public bint parity

    @cython.locals(n_abs=Py_ssize_t, i=Py_ssize_t, row=list, e="long long", origin=long, dest=long, diff=long,
                   hops="long long", dist=long)
    cpdef step(self, Py_ssize_t node, long long slot, long long offered, long long accepted, long long sent,
               long long deflected, long long dist_after, long long n_after, object ddists, object absorbed_e,
               object absorbed_a, long long queue, object absorbed_ends=*)


cdef class ForcedDeflections:
    cdef public object book
    cdef public bint judged
    cdef public long long sends, slot
    cdef public list used, touched, wanted

    # ports number below 25 (a hypercube of at most 24 dimensions): a node's used ports and
    # a packet's preferred links are bit masks in a C integer, node ids below 2**24
    @cython.locals(used="unsigned long long", preferred=long)
    cpdef hop(self, Py_ssize_t node, long long slot, Py_ssize_t port, long dest, object _seq=*)
    @cython.locals(i=Py_ssize_t, wanted=list, node=Py_ssize_t, idle=object)
    cpdef end_slot(self)
