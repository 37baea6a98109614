"""The site-packages directories for a process started without them.

The launch helper starts with ``python -S`` (runner/lib/launch_helper.sh):
the ``site`` step (the .pth files of every installed package, sitecustomize,
the user site) costs ~5 ms of every launch before the first record, and the
helper's first step needs only the standard library and this package (on
PYTHONPATH). The two third-party packages the package imports, PyYAML and
psutil, call ``ensure_site`` first, which runs that step then, once: the same
``site.main()`` the interpreter runs at start, so the same directories, .pth
files and customisations. In a process that started normally it does nothing.
"""

from __future__ import annotations

import sys

_done = False


def ensure_site() -> None:
    """Run the interpreter's site step if it was skipped (-S) and not run yet."""
    global _done
    if _done or not sys.flags.no_site:
        return
    _done = True
    import site

    site.main()
