"""The Gemini API (`/v1beta/models/{model}:generateContent` and its kin) as a front door of
the engine, for Gemini CLI and the google-genai SDKs."""

from __future__ import annotations

from .api import asks_gemini, model_method
from .errors import BETA_PATH, MODELS_PATH, google_error_answer
from .models import gemini_model, gemini_models
from .request import GeminiRequest, parse_count_tokens_request, parse_gemini_request
from .routes import gemini_routes

__all__ = [
    "BETA_PATH",
    "MODELS_PATH",
    "GeminiRequest",
    "asks_gemini",
    "gemini_model",
    "gemini_models",
    "gemini_routes",
    "google_error_answer",
    "model_method",
    "parse_count_tokens_request",
    "parse_gemini_request",
]
