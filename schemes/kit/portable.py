"""Float arithmetic that gives the same bits on every machine, for analytic models.

numpy hands matrix products (``@``, ``dot``, ``convolve``) and ``linalg.solve`` to the BLAS
and LAPACK kernels of its OpenBLAS build, which picks a kernel for the processor it runs on
(``OPENBLAS_CORETYPE`` names them), and it runs ``exp``, ``exp2``, ``log`` and ``power`` on
arrays through code chosen by the processor's vector extensions (``NPY_DISABLE_CPU_FEATURES``).
Each choice rounds differently in the last bits, so a model computed with them differs
between machines, and so does every result that carries the model (``Result.theory``,
``theory_agreement``). The models of slotnet's schemes use these functions instead:

* sums of products by :func:`math.fsum` (the correctly rounded sum of the rounded products),
* :func:`solve`: Gaussian elimination with partial pivoting, in Python floats, in a fixed order,
* :func:`exp`: :func:`math.exp` element by element (the C library's, the same on every machine
  that has the same C library; CPython's own ``lgamma`` and ``fsum`` are the same everywhere).

The systems they serve are small (d up to a few dozen), so the cost is nothing beside a run.
Elementwise ``+ - * /``, ``sqrt``, ``cumsum``, ``cumprod`` and ``sum`` are exact or in a fixed
order in numpy and need no replacement.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = ["convolve", "dot", "exp", "matvec", "solve", "vecmat"]

Vector = npt.NDArray[np.float64]


def _floats(a: npt.ArrayLike) -> list[float]:
    return [float(x) for x in np.asarray(a, dtype=np.float64).ravel()]


def dot(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """``sum_i a_i b_i``, correctly rounded from the rounded products.

    Example:
        >>> dot([0.1, 0.2], [3.0, 3.0])
        0.9000000000000001
    """
    x, y = _floats(a), _floats(b)
    if len(x) != len(y):
        raise ValueError(f"dot needs vectors of one length, got {len(x)} and {len(y)}")
    return math.fsum(p * q for p, q in zip(x, y))


def vecmat(v: npt.ArrayLike, m: npt.ArrayLike) -> Vector:
    """The row vector ``v @ m`` (``m`` of shape (len(v), k)), each entry by :func:`dot`."""
    mat = np.asarray(m, dtype=np.float64)
    return np.array([dot(v, mat[:, j]) for j in range(mat.shape[1])], dtype=np.float64)


def matvec(m: npt.ArrayLike, v: npt.ArrayLike) -> Vector:
    """The column vector ``m @ v`` (``m`` of shape (k, len(v))), each entry by :func:`dot`."""
    mat = np.asarray(m, dtype=np.float64)
    return np.array([dot(mat[i], v) for i in range(mat.shape[0])], dtype=np.float64)


def convolve(a: npt.ArrayLike, b: npt.ArrayLike) -> Vector:
    """The full discrete convolution of ``a`` and ``b`` (``numpy.convolve``'s ``mode='full'``)."""
    x, y = _floats(a), _floats(b)
    n = len(x) + len(y) - 1
    return np.array([math.fsum(x[i] * y[k - i] for i in range(max(0, k - len(y) + 1), min(k, len(x) - 1) + 1))
                     for k in range(n)], dtype=np.float64)


def exp(a: npt.ArrayLike) -> Vector:
    """``e**a`` element by element with :func:`math.exp`, in ``a``'s shape."""
    arr = np.asarray(a, dtype=np.float64)
    return np.fromiter(map(math.exp, arr.ravel().tolist()), dtype=np.float64, count=arr.size).reshape(arr.shape)


def solve(a: npt.ArrayLike, b: npt.ArrayLike) -> Vector:
    """The solution x of ``a x = b`` for a square, non-singular ``a``.

    Gaussian elimination with partial pivoting (the first row of largest magnitude wins a
    tie), then back substitution, every operation a Python float's.

    Raises:
        ValueError: if ``a`` is not square, ``b`` does not match, or ``a`` is singular.

    Example:
        >>> solve([[2.0, 1.0], [1.0, 3.0]], [3.0, 5.0]).tolist()
        [0.8, 1.4]
    """
    mat = np.asarray(a, dtype=np.float64)
    n = mat.shape[0]
    if mat.ndim != 2 or mat.shape[1] != n:
        raise ValueError(f"solve needs a square matrix, got shape {mat.shape}")
    rhs = _floats(b)
    if len(rhs) != n:
        raise ValueError(f"solve needs a right-hand side of length {n}, got {len(rhs)}")
    rows: list[list[float]] = [[float(x) for x in mat[i]] + [rhs[i]] for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(rows[r][col]))
        if rows[pivot][col] == 0.0:
            raise ValueError("solve: the matrix is singular")
        rows[col], rows[pivot] = rows[pivot], rows[col]
        head = rows[col]
        for r in range(col + 1, n):
            row = rows[r]
            factor = row[col] / head[col]
            if factor != 0.0:
                for k in range(col, n + 1):
                    row[k] -= factor * head[k]
    x = [0.0] * n
    for i in range(n - 1, -1, -1):
        row = rows[i]
        x[i] = (row[n] - math.fsum(row[k] * x[k] for k in range(i + 1, n))) / row[i]
    return np.array(x, dtype=np.float64)

