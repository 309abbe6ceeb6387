"""protocols/ is sans-IO: importing it must not load networking or event-loop modules
(a stray import such as xml.sax.saxutils brings in urllib.request, socket and ssl)."""

import json
import subprocess
import sys

FORBIDDEN_ROOTS = {"socket", "ssl", "asyncio", "http"}
FORBIDDEN = {"urllib.request"}  # urllib.parse is pure string work and may load


def test_importing_protocols_loads_no_io_module() -> None:
    script = "import json, sys, protocols; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    loaded = json.loads(result.stdout)
    assert "protocols.formats.json_mix" in loaded  # the registry imported every protocol
    io_modules = [
        name for name in loaded if name.split(".")[0] in FORBIDDEN_ROOTS or name in FORBIDDEN
    ]
    assert io_modules == []
