"""Test-session set-up.

pytest-xdist runs several test processes at once on a machine with few
cores, and OpenMP's default (active) waiting makes idle threads spin and
steal the cores the busy ones need. Passive waiting keeps the suite fast;
it must be set before the OpenMP runtime is loaded, hence here.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
