"""The HTTP surface: one ASGI app for Azure Functions, uvicorn and the tests."""

from shared.api.app import create_app

__all__ = ["create_app"]
