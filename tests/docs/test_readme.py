"""The documentation's reference tables say what the program does: the configuration table
(docs/configuration.md) lists exactly the settings (with their flags and defaults), the
metrics table (docs/metrics-and-logs.md) exactly the collectors the proxy registers, and the
front page's top settings are rows of the configuration table. A setting, flag or metric
added without its row fails here, and so does a link between the pages that leads nowhere."""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path

from pydantic import SecretStr

from service.__main__ import FLAG_VARIABLES, build_parser
from service.observability.metrics import MULTIPROCESS_DIR_VARIABLE, ProxyMetrics
from service.settings import Settings


def repository_root() -> Path:
    """The directory holding pyproject.toml, found upwards from this file wherever it lives."""
    here = Path(__file__).resolve()
    return next(folder for folder in here.parents if (folder / "pyproject.toml").is_file())


ROOT = repository_root()
README = ROOT / "README.md"
DOCS = ROOT / "docs"
CONFIGURATION = DOCS / "configuration.md"
METRICS = DOCS / "metrics-and-logs.md"
# Variables the docs document that a library reads, not `Settings`.
LIBRARY_VARIABLES = {MULTIPROCESS_DIR_VARIABLE}
CODE = re.compile(r"`([^`]+)`")
FLAG = re.compile(r"--[a-z][a-z-]*")
HEADING = re.compile(r"(#{1,6}) (.+)")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def headings(page: Path) -> list[tuple[int, str]]:
    """(line number, title) of each Markdown heading of `page`, lines in code fences left out."""
    found = []
    in_fence = False
    for number, line in enumerate(page.read_text().splitlines()):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence and (match := HEADING.fullmatch(line)):
            found.append((number, match[2].strip()))
    return found


def table_under(page: Path, heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first Markdown table after the heading `heading` (of
    any level) of `page`, before the next heading; header and separator rows left out."""
    lines = page.read_text().splitlines()
    numbers = [number for number, _ in headings(page)] + [len(lines)]
    starts = [number for number, title in headings(page) if title == heading]
    assert starts, f"{page.name} has no heading {heading!r}"
    section = lines[starts[0] + 1 : next(n for n in numbers if n > starts[0])]
    table = [i for i, line in enumerate(section) if line.startswith("|")]
    assert table, f"{page.name} has no table under {heading!r}"
    rows = []
    for line in section[table[0] + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def settings_rows(rows: list[list[str]]) -> dict[str, tuple[str, str]]:
    """{VARIABLE: (flag cell, default cell)} from the rows of a settings table."""
    settings = {}
    for variable, flag, default, _meaning in rows:
        [name] = CODE.findall(variable)
        assert name not in settings, f"{name} has two rows"
        settings[name] = (flag, default)
    return settings


def configuration() -> dict[str, tuple[str, str]]:
    """{VARIABLE: (flag cell, default cell)} from the configuration table."""
    return settings_rows(table_under(CONFIGURATION, "Configuration"))


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
    """A default as the docs write it."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    assert not isinstance(value, SecretStr)
    return str(value)


def test_the_front_page_top_settings_are_rows_of_the_configuration_table() -> None:
    """The README's short table repeats rows of the full one: same flags, same defaults."""
    top = settings_rows(table_under(README, "Top settings"))
    full = configuration()

    assert top
    assert {variable: full.get(variable) for variable in top} == top


def test_metrics_table_lists_every_collector_with_its_type() -> None:
    registered = {
        family.name + ("_total" if family.type == "counter" else ""): family.type
        for family in ProxyMetrics().registry.collect()
    }
    documented = {}
    for metric, kind, _labels, _meaning in table_under(METRICS, "Metrics"):
        [name] = CODE.findall(metric)
        documented[name] = kind

    assert documented == registered


def anchor(title: str) -> str:
    """A heading's anchor as GitHub writes it: lower case, punctuation dropped, spaces as `-`."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def anchors_of(page: Path) -> set[str]:
    return {anchor(title) for _, title in headings(page)}


def test_every_link_between_the_pages_leads_to_a_page_and_heading() -> None:
    broken = []
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        for target in LINK.findall(page.read_text()):
            if "://" in target:
                continue
            path, _, fragment = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.is_file() or (fragment and fragment not in anchors_of(linked)):
                broken.append(f"{page.name}: {target}")

    assert broken == []
