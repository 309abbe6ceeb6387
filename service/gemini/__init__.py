"""The Gemini API (`/v1beta/models/{model}:generateContent` and its kin) on the chat
machinery, for Gemini CLI and the google-genai SDKs."""

from __future__ import annotations

from .request import GeminiRequest, parse_count_tokens_request, parse_gemini_request

__all__ = ["GeminiRequest", "parse_count_tokens_request", "parse_gemini_request"]
