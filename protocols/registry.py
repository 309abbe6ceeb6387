"""Classes registered by name: the protocols, so a deployment picks one by configuration, and
the dialects, which every protocol's parser looks for. One decorator registers either, in
the table of its kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar


class Registered:
    """A class registered by name. Each kind (`Protocol`, `Dialect`) holds its own table,
    `registered`, and a subclass of it is registered there."""

    name: ClassVar[str]
    registered: ClassVar[dict[str, Any]]


R = TypeVar("R", bound=type[Registered])


def register(name: str) -> Callable[[R], R]:
    """Class decorator: `@register("json-mix") class JsonMix(Protocol): ...`, and as well
    `@register("kimi-k2") class KimiK2(Dialect): forms = ...`."""

    def decorate(cls: R) -> R:
        cls.name = name
        cls.registered[name] = cls
        return cls

    return decorate
