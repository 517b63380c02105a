# C layout of the parking record and the runtime, used when setup.py compiles _runtime.py
# (an "augmenting .pxd": the .py stays the one source). The driver's wake-up loop reads a
# record's fields as C struct members; ``running`` counts tasks and ``steps`` finished steps (below 2**63).
import cython

cdef class SlotRuntime

cdef class Parking:
    cdef public object node, incarnation, task, wake_slot, timer, since
    cdef public bint parked
    cdef public SlotRuntime runtime

    @cython.locals(runtime=SlotRuntime)
    cpdef Parking next_slot(self)

    @cython.locals(runtime=SlotRuntime)
    cpdef Parking idle(self, object until, object slot)

cdef class SlotRuntime:
    cdef public Py_ssize_t running, steps
    cdef public list active, timers, records
    cdef public object _on_unread, _driver, wakeups
    cdef public bint _driver_parked

    cpdef step_done(self)

    @cython.locals(rec=Parking, n=Py_ssize_t, records=list, active=list, timers=list, wake_task=object)
    cpdef Py_ssize_t wake(self, object slot, object deliveries)
