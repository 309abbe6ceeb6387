"""The dialects every protocol's parser recognises (see `protocols.streaming.dialect_forms`),
one module each; importing this package registers them. No two claim the same text (where
two begin with the same marker, what follows it tells them apart), so their order does not
matter."""

from . import (  # noqa: F401  (registers the dialects)
    deepseek,
    gemma,
    glm,
    granite,
    harmony,
    hermes,
    invoke,
    kimi,
    llama,
    mistral,
    pythonic,
    qwen3_coder,
)
