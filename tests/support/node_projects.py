"""The node projects the client tests run (tests/clients/<name>/), installed from their
committed lockfiles with `npm ci` on first use: the npm registry is the only network this
needs, and a machine without node skips those tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

NODE = shutil.which("node")
# A bound, so a stuck registry fails the test, not the suite.
NPM_CI_TIMEOUT_SECONDS = 300


def install(project: Path, installed: Path) -> None:
    """`npm ci` in `project`, unless `installed` (a path the install creates) is there."""
    if installed.exists():
        return
    npm = shutil.which("npm")
    assert npm is not None, "npm is needed beside node to install the locked packages"
    subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=project,
        check=True,
        timeout=NPM_CI_TIMEOUT_SECONDS,
    )
