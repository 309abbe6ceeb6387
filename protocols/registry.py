"""Protocols registered by name, so a deployment picks one by configuration."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .base import Protocol

_PROTOCOLS: dict[str, type[Protocol]] = {}

P = TypeVar("P", bound="type[Protocol]")


def register(name: str) -> Callable[[P], P]:
    """Class decorator: `@register("json-mix") class JsonMix(Protocol): ...`"""

    def decorate(cls: P) -> P:
        cls.name = name
        _PROTOCOLS[name] = cls
        return cls

    return decorate


class UnknownProtocolError(ValueError):
    pass


def get_protocol(name: str, **options: Any) -> Protocol:
    """`get_protocol("morph-xml")` -> a ready protocol instance."""
    try:
        cls = _PROTOCOLS[name]
    except KeyError:
        raise UnknownProtocolError(
            f"unknown protocol {name!r}; known: {', '.join(protocol_names())}"
        ) from None
    return cls(**options)


def protocol_names() -> list[str]:
    return sorted(_PROTOCOLS)
