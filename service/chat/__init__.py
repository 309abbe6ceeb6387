"""`POST /v1/chat/completions`, the chat front door: the client's request decoded and checked,
relayed when the proxy has nothing to do, else answered by the engine (`exchange`) and its
events written as chat completion chunks or as one completion (`writer.py`)."""

from __future__ import annotations

from .completions import create_completion
from .routes import chat_routes

__all__ = ["chat_routes", "create_completion"]
