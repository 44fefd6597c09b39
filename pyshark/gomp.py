"""libgomp's wait policy for PyShark's cpu backend, set when pyshark is
imported.

libgomp reads GOMP_SPINCOUNT once, when it loads, and serves every user of
the process: PyShark's compiled modules, and Numba's `omp` threading layer,
which loads the same libgomp and shares its thread pool. Set at import
(not at the first compiled module, as before session 31), the policy holds
whichever of them loads libgomp first: the benchmark runner's Numba peers
loaded it before any PyShark module, so every table until then was timed
under libgomp's own default (300000).
"""
from __future__ import annotations

import os

#: libgomp's spin count before a waiting thread sleeps, when the user set
#: neither GOMP_SPINCOUNT nor OMP_WAIT_POLICY: the count libgomp itself
#: uses when it has more threads than CPUs. Its default, 300000 pause loops
#: (milliseconds on some CPUs), is spent by a thread waiting at a barrier on
#: a core that a descheduled team-mate or another process needs; counts of
#: 10000-100000 were worse still for small calls under load (they sleep just
#: before the next call comes). See docs/cpu-backend.md, "Under load".
GOMP_SPINCOUNT_DEFAULT = "1000"


def quiet_gomp_spin() -> None:
    """Sets GOMP_SPINCOUNT for libgomp (read once, when it loads) unless
    the user chose a wait policy."""
    if "GOMP_SPINCOUNT" in os.environ or "OMP_WAIT_POLICY" in os.environ:
        return
    os.environ["GOMP_SPINCOUNT"] = GOMP_SPINCOUNT_DEFAULT
