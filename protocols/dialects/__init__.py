"""The dialects every protocol's parser recognises (see `protocols.streaming.dialect_forms`),
one module each; importing this package registers them. No two claim the same text (where
two begin with the same marker, what follows it tells them apart), so their order does not
matter."""

from . import (  # noqa: F401  (registers the dialects)
    cohere,
    deepseek,
    dsml,
    functionary,
    gemma,
    gemma4,
    glm,
    granite,
    harmony,
    hermes,
    hunyuan,
    invoke,
    kimi,
    kimi_k3,
    llama,
    minimax_m3,
    mistral,
    phi4_mini,
    python_list,
    pythonic,
    qwen3_xml,
    seed_oss,
    step3,
)
