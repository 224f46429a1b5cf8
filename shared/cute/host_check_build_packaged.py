"""What a packaged single file carries under the name of host_check_build.py: no C++ source, so no
compiled check (host_check.py then checks in Python)."""


def compiled():
    raise RuntimeError("a packaged file carries no C++ source: the check runs in Python")
