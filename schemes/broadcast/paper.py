"""Stamoulis & Tsitsiklis's published figures, transcribed as printed.

Table 2 is withheld from the seed copy on purpose and is not reconstructed.
"""

from __future__ import annotations

__all__ = ["TABLE_1", "TABLE_1_PRINTED_SLIPS"]

#: Table 1 (§4.3.3), d = 8, non-idling d-tree scheme, 5,000 simulated slots:
#: (rho, Simulation, Approximation (25), Relative Error in %).
TABLE_1 = [
    (0.025, 8.5581, 8.5689, 0.13),
    (0.050, 8.6084, 8.6414, 0.38),
    (0.075, 8.6937, 8.7179, 0.28),
    (0.100, 8.7554, 8.7986, 0.49),
    (0.125, 8.8544, 8.8839, 0.33),
    (0.150, 8.9556, 8.9742, 0.21),
    (0.175, 9.0642, 9.0699, 0.06),
    (0.200, 9.1945, 9.1718, -0.25),
    (0.225, 9.3045, 9.2801, -0.26),
    (0.250, 9.4417, 9.3957, -0.49),
    (0.275, 9.6211, 9.5192, -1.06),
    (0.300, 9.7944, 9.6515, -1.46),
    (0.325, 10.0516, 9.7938, -2.56),
    (0.350, 10.2045, 9.9469, -2.52),
    (0.375, 10.4875, 10.1123, -3.58),
    (0.400, 10.7547, 10.2914, -4.31),
]

#: Two printed approximation entries are one last-digit unit below the correctly
#: rounded value of (25) (9.0699887 -> 9.0700, 9.6516098 -> 9.6516); slips in the table
#: (see tests/unit/schemes/broadcast/test_broadcast_theory.py for what was ruled out).
TABLE_1_PRINTED_SLIPS = {0.175: 9.0700, 0.300: 9.6516}
