"""How long a test waits for what must happen: until it happens (a line written, a process
ended, a client gone). The one bound, `HUNG_AFTER_SECONDS`, is far beyond what any step takes
on a loaded machine: it turns a hang, which is a bug, into a failed test instead of a suite
stalled until CI's own limit. It is never what a slow machine reaches, and never a wait that
stands in for a condition."""

from __future__ import annotations

HUNG_AFTER_SECONDS = 600.0
