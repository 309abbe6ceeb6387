"""The dialects every protocol's parser recognises (see `protocols.streaming.dialect_forms`):
the rows of the dialect table (`table`), formats described as data, and a module each for the
formats whose reading needs code of its own; importing this package registers them. No two
claim the same text (where two begin with the same marker, what follows it tells them apart),
so their order does not matter."""

from . import (  # noqa: F401  (registers the dialects)
    cwm,
    dsml,
    functionary,
    glm,
    hermes,
    invoke,
    kimi_k3,
    minimax_m3,
    phi4_mini,
    pythonic,
    qwen3_xml,
    table,
)
