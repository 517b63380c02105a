"""Seeded results carry no bits that depend on the machine's processor.

numpy picks its BLAS/LAPACK kernel (OpenBLAS: ``OPENBLAS_CORETYPE``) and the vector code of
``exp``, ``log``, ``power`` (``NPY_DISABLE_CPU_FEATURES``) by the processor it runs on, and
each choice rounds differently. A model computed with them gave a result digest on a new
machine that differed from the one pinned here. These tests compute every scheme's model,
and a faulted run's whole result, in a child process made to choose other kernels, and
require the same bits as this process: a scheme whose model goes back to ``@`` or
``np.linalg`` fails here, on any machine, not on the next user's.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

#: scheme -> topologies whose model is computed in both processes
MODELS: dict[str, tuple[str, ...]] = {
    "deflection": ("hypercube:3", "hypercube:6", "hypercube:11"),
    "bcast-simple": ("hypercube:4", "hypercube:9"),
    "bcast-dtree": ("hypercube:4", "hypercube:9"),
    "bcast-balanced": ("hypercube:4", "hypercube:9"),
    "bcast-indirect": ("hypercube:4", "hypercube:9"),
    "bcast-periodic": ("hypercube:4", "hypercube:9"),
    "star": ("torus:4x4", "hypercube:6"),
    "prefix-scan": ("mesh:4x4", "torus:8x8"),
    "packing": ("mesh:4x4",),
    "monotone": ("mesh:4x4",),
    "pmnb": ("mesh:4x4", "torus:6x6"),
    "array-broadcast": ("torus:8",),
    "partial-exchange": ("mesh:4x4",),
    "dynamic-broadcast": ("mesh:4x4",),
    "m2o-greedy": ("mesh:8x8",),
    "m2o-rec": ("mesh:8x8",),
    "m2o-bfs": ("mesh:8x8",),
    "m2o-offline": ("mesh:8x8",),
}
LOADS = {"deflection": {"offered": 0.7}, "star": {"rho": 0.5}, "dynamic-broadcast": {"rho": 0.3},
         **{f"bcast-{kind}": {"rho": 0.4} for kind in ("simple", "dtree", "balanced", "indirect", "periodic")}}

_CHILD = r"""
import json, sys
import slotnet
from slotnet.orchestrator import WALL_CLOCK_FIELDS
models, loads = json.loads(sys.argv[1]), json.loads(sys.argv[2])
out = {}
for name, topologies in models.items():
    scheme = slotnet.get_scheme(name)
    load = loads.get(name, {})
    for topo in topologies:
        prep = slotnet.RunSpec(name, topo, load=load, slots=1, warmup=0).prepare(check_memory=False)
        out[f"{name} {topo}"] = repr(scheme.theory(prep.setup)) if scheme.theory else None
faults = ["crash@10:3", "link-down@12:2:1", "link-up@15:2:1", "recover@20:3", "stall@5:8:6",
          "partition@25:28:0-3", "loss=0.05", "dup=0.03", "delay=0.05:2", "corrupt=0.03"]
result = slotnet.run(slotnet.RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=40, seed=3, faults=faults))
whole = {k: v for k, v in result.to_dict(per_node=True, series=True).items() if k not in WALL_CLOCK_FIELDS}
out["faulted deflection run"] = json.dumps(whole, sort_keys=True, default=repr)
print(json.dumps(out))
"""


def _other_machine() -> dict[str, str]:
    """The environment of a machine whose numpy and OpenBLAS choose their baseline kernels."""
    env = dict(os.environ)
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # numpy 1.x
        from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__  # type: ignore[no-redef]
    enabled = [f for f in __cpu_dispatch__ if __cpu_features__.get(f)]
    if enabled:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(enabled)
    if platform.machine() in ("x86_64", "AMD64"):
        env["OPENBLAS_CORETYPE"] = "Prescott"  # OpenBLAS's oldest x86-64 kernels
    return env


def _compute(env: dict[str, str] | None) -> dict[str, str | None]:
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(MODELS), json.dumps(LOADS)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_registry_is_covered():
    """Every registered scheme with a model is in MODELS, so a new one is checked too."""
    import slotnet

    with_models = {name for name, scheme in slotnet.SCHEMES.items() if scheme.theory is not None}
    assert with_models <= set(MODELS), sorted(with_models - set(MODELS))


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="the kernels named here are x86-64's")
def test_models_and_a_faulted_run_have_the_same_bits_under_other_kernels():
    """Every scheme's model, and a faulted run's whole result, are identical under numpy's and
    OpenBLAS's baseline kernels and under the kernels this processor selects."""
    here, there = _compute(None), _compute(_other_machine())
    assert here.keys() == there.keys()
    differ = [key for key in here if here[key] != there[key]]
    assert not differ, f"differ between kernels: {differ}"
