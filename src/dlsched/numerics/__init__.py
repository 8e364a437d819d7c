"""Small numerical kernels whose results are the same bits on every CPU.

Results that go through a fit decide simulations (a model's step times choose allocations), so
a fit must not depend on the machine. NumPy's BLAS (OpenBLAS picks kernels by CPU model) and its
transcendental functions (dispatched to AVX2 or AVX-512 code at run time) give answers that
differ in the last bits from one CPU to another, and a greedy policy turns such a bit into a
different decision. The functions here use only what IEEE-754 fixes bit for bit: ``+ − × ÷``
and square roots (correctly rounded wherever they run, NumPy's vector loops included),
:func:`math.fsum` (correctly rounded sums, whatever the order), comparisons, and the C
library's scalar ``exp``, ``log`` and ``pow`` (one implementation for every x86-64 CPU with
FMA, which every CPU of this project's machines has).

- :mod:`~dlsched.numerics.lstsq`: linear least squares (Householder QR) and non-negative least
  squares (Lawson–Hanson) for problems of a few columns;
- :mod:`~dlsched.numerics.curve_fit`: bounded nonlinear least squares (Levenberg–Marquardt);
- :mod:`~dlsched.numerics.elementwise`: ``exp``, ``log`` and ``pow`` over arrays.

``tests/numerics/test_cross_cpu.py`` runs the project's fits and simulations under every
OpenBLAS kernel and NumPy dispatch level the machine supports and requires identical bits.
"""
