# C types for the locals of _rule.py's per-packet loops, used when setup.py compiles it
# (an "augmenting .pxd": the .py stays the one source). Node ids, destinations and port
# masks fit in a C long: a hypercube has at most 24 dimensions (fabric/_topology.py).
# A draw u of the node's stream is a C double; int(u * count) truncates it as Python does.
import cython
from slotnet.nodes._philox cimport PhiloxStream, stream_of

@cython.locals(count=long)
cdef long _popcount(long x)

cpdef list one_pass(long node, object dests, long d, object rand, Py_ssize_t first=*, object live=*)

@cython.locals(n=Py_ssize_t, i=Py_ssize_t, j=Py_ssize_t, k=Py_ssize_t, r=Py_ssize_t, diff=long,
               mask=long, free=long, spare=long, bit=long, deflected=bint, order=list, out=list, u=double,
               ps=PhiloxStream)
cpdef list _assign(long node, object dests, long d, object rand, Py_ssize_t first, object live)

@cython.locals(_=Py_ssize_t, dest=long, u=double, ps=PhiloxStream)
cpdef admit(long node, long n, object slot, Py_ssize_t count, object rand, list pkts, object queue)

@cython.locals(continuing=list, entered=list, arrived=list, ends=list)
cpdef tuple absorb(long node, object inbox, bint queueing)

@cython.locals(dests=list, codes=list, deflected=long, dist_after=long, n_after=long, ddists=list, port=long,
               code=long, after=long, i=Py_ssize_t, lead=Py_ssize_t)
cpdef tuple transmit(long node, object pkts, long d, object rand, object send, Py_ssize_t first=*, object live=*)
