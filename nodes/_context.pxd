# C layout of a node's context, used when setup.py compiles _context.py (an "augmenting
# .pxd": the .py stays the one source). The context's fields become C struct members, so
# its methods and properties (``slot``, ``live_ports``, ``record``, ``idle``: a few per
# node and slot) read them without attribute lookups, and a scheme's read of a property
# is one getset descriptor instead of a Python property call. Every field stays
# readable and writable from Python (``public``), as the slots of the pure build are.
import cython

cdef class NodeContext:
    cdef public object node, n_nodes, geometry, params, send, quantum, incarnation
    cdef public object _clock, _parking, _recorder, _port_of
    # a dict (or None), so that ``record`` looks a kind up in C
    cdef public dict _handlers
    cdef public object _coords, _port_ids, _dead, _detect, _outlet, _seed, _rng, _chooser

    # the monitor's tables as C-level dicts: a choice is two lookups and a store (the run's
    # PropertyMonitor.counts: plain dicts, never a subclass)
    @cython.locals(chooser=tuple, table=dict, counts=dict)
    cpdef record_choice(self, object name, object value)

cdef class TracedContext(NodeContext):
    cdef public object _tap, _raw_send
