"""Test-session set-up.

The suite runs as users run skboost: no OpenMP environment variable is set
here (pytest-xdist's workers share the cores, a busy machine as users
have; skboost's own runtime and thread tuner must cope, see
doc/user_guide/threads.rst). A test may set one for the case it is about,
in a subprocess.
"""
