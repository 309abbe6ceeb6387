"""The README's reference tables say what the program does: its configuration table lists
exactly the settings (with their flags and defaults), its metrics table exactly the
collectors the proxy registers. A setting, flag or metric added without its row fails here."""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path

from pydantic import SecretStr

from service.__main__ import FLAG_VARIABLES, build_parser
from service.metrics import MULTIPROCESS_DIR_VARIABLE, ProxyMetrics
from service.settings import Settings

README = Path(__file__).resolve().parent.parent / "README.md"
# Variables the README documents that a library reads, not `Settings`.
LIBRARY_VARIABLES = {MULTIPROCESS_DIR_VARIABLE}
CODE = re.compile(r"`([^`]+)`")
FLAG = re.compile(r"--[a-z][a-z-]*")


def table_under(heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first Markdown table after `## heading`, header and
    separator rows left out."""
    text = README.read_text()
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    lines = section.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def configuration() -> dict[str, tuple[str, str]]:
    """{VARIABLE: (flag cell, default cell)} from the configuration table."""
    rows = {}
    for variable, flag, default, _meaning in table_under("Configuration"):
        [name] = CODE.findall(variable)
        assert name not in rows, f"{name} has two rows"
        rows[name] = (flag, default)
    return rows


def test_configuration_table_lists_every_setting_and_nothing_else() -> None:
    settings = {name.upper() for name in Settings.model_fields}

    assert configuration().keys() == settings | LIBRARY_VARIABLES


def test_every_flag_of_the_command_has_the_row_of_the_variable_it_sets() -> None:
    flags_in_help = set(FLAG.findall(build_parser().format_help())) - {"--help"}
    documented = {
        FLAG.findall(flag)[0]: variable for variable, (flag, _) in configuration().items() if flag
    }

    assert documented.keys() == flags_in_help
    assert documented == {
        f"--{name.replace('_', '-')}": variable for name, variable in FLAG_VARIABLES.items()
    }


def test_every_literal_default_in_the_table_is_the_settings_default() -> None:
    """A default cell that is one literal (`8000`) must be the default; a described one
    (`unset: embedded demo`) is prose, read by people."""
    table = configuration()
    literal = {}
    for variable, (_flag, cell) in table.items():
        values = CODE.findall(cell)
        is_literal = cell == f"`{values[0]}`" if values else False
        # `PROXY_HOST` as a default names another variable: that one's value.
        if is_literal and variable not in LIBRARY_VARIABLES and values[0] not in table:
            literal[variable] = values[0]
    defaults = {name.upper(): field.default for name, field in Settings.model_fields.items()}

    assert len(literal) > len(defaults) / 2  # most defaults are literals
    assert {variable: shown(defaults[variable]) for variable in literal} == literal


def shown(value: object) -> str:
    """A default as the README writes it."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    assert not isinstance(value, SecretStr)
    return str(value)


def test_metrics_table_lists_every_collector_with_its_type() -> None:
    registered = {
        family.name + ("_total" if family.type == "counter" else ""): family.type
        for family in ProxyMetrics().registry.collect()
    }
    documented = {}
    for metric, kind, _labels, _meaning in table_under("Metrics"):
        [name] = CODE.findall(metric)
        documented[name] = kind

    assert documented == registered
