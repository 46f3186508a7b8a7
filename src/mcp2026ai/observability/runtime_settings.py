"""Triton's trace and logging extensions: settings a client reads and changes while the server runs.

Trace settings map onto the OpenTelemetry sampling (``trace_level`` OFF stops sampling new traces,
otherwise one trace in ``trace_rate`` is sampled; a caller's sampled ``traceparent`` is always kept);
per-model settings are stored and reported as Triton does. Log settings map onto the level of the
``mcp2026ai`` loggers (``log_verbose_level`` > 0: DEBUG; else INFO, WARNING or ERROR as enabled).
"""

from __future__ import annotations

import logging
from typing import Any

from mcp2026ai.errors import InvalidArgumentError

TRACE_LEVELS = {"OFF", "TIMESTAMPS", "TENSORS"}
_TRACE_DEFAULTS: dict[str, Any] = {
    "trace_level": ["OFF"],
    "trace_rate": "1000",
    "trace_count": "-1",
    "log_frequency": "0",
    "trace_file": "",
    "trace_mode": "opentelemetry",
}
_LOG_BOOLS = ("log_info", "log_warning", "log_error")
LOGGER = "mcp2026ai"


class TraceSettings:
    """Global trace settings and per-model overrides, as Triton's ``/v2/trace/setting`` reports them."""

    def __init__(self, sample_ratio: float = 0.0) -> None:
        self._global = dict(_TRACE_DEFAULTS)
        if sample_ratio > 0:
            self._global.update(trace_level=["TIMESTAMPS"], trace_rate=str(max(1, round(1 / sample_ratio))))
        self._models: dict[str, dict[str, Any]] = {}

    def get(self, model: str | None = None) -> dict[str, Any]:
        return {**self._global, **self._models.get(model or "", {})}

    def update(self, changes: dict[str, Any], model: str | None = None) -> dict[str, Any]:
        """Apply ``changes`` (None clears a model's override); the sampling follows the global settings."""
        target = self._models.setdefault(model, {}) if model else self._global
        for key, value in changes.items():
            if key not in _TRACE_DEFAULTS:
                raise InvalidArgumentError(f"unknown trace setting {key[:100]!r} (known: {', '.join(_TRACE_DEFAULTS)})")
            if value is None:
                if model:
                    target.pop(key, None)
                else:
                    target[key] = _TRACE_DEFAULTS[key]
                continue
            target[key] = _checked(key, value)
        if not model:
            _apply_sampling(self._global)
        return self.get(model)


def _checked(key: str, value: Any) -> Any:
    if key == "trace_level":
        levels = value if isinstance(value, list) else [value]
        if not levels or not all(isinstance(level, str) and level.upper() in TRACE_LEVELS for level in levels):
            raise InvalidArgumentError(f"trace_level {str(value)[:100]} must be a list of {sorted(TRACE_LEVELS)}")
        return [level.upper() for level in levels]
    text = str(value)
    if key in ("trace_rate", "trace_count", "log_frequency"):
        try:
            number = int(text)
        except ValueError:
            raise InvalidArgumentError(f"{key} must be an integer, got {text[:40]!r}") from None
        if (key == "trace_rate" and number < 1) or (key != "trace_count" and number < 0) or number < -1:
            raise InvalidArgumentError(f"{key} {number} is out of range")
    return text


def _apply_sampling(settings: dict[str, Any]) -> None:
    ratio = 0.0 if "OFF" in settings["trace_level"] else 1 / int(settings["trace_rate"])
    try:
        from mcp2026ai.observability import sampling
    except ImportError:  # no OpenTelemetry SDK: nothing is exported, the settings are only kept
        return
    if sampling.ACTIVE is not None:
        sampling.ACTIVE.set_ratio(ratio)


class LogSettings:
    """Triton's ``/v2/logging`` settings over Python logging."""

    def __init__(self) -> None:
        self._settings: dict[str, Any] = {
            "log_file": "",
            "log_info": True,
            "log_warning": True,
            "log_error": True,
            "log_verbose_level": 0,
            "log_format": "default",
        }

    def get(self) -> dict[str, Any]:
        return dict(self._settings)

    def update(self, changes: dict[str, Any]) -> dict[str, Any]:
        for key, value in changes.items():
            if key not in self._settings:
                raise InvalidArgumentError(f"unknown log setting {key[:100]!r} (known: {', '.join(self._settings)})")
            self._settings[key] = _log_value(key, value)
        logging.getLogger(LOGGER).setLevel(self._level())
        return self.get()

    def _level(self) -> int:
        if self._settings["log_verbose_level"] > 0:
            return logging.DEBUG
        for key, level in (("log_info", logging.INFO), ("log_warning", logging.WARNING), ("log_error", logging.ERROR)):
            if self._settings[key]:
                return level
        return logging.CRITICAL


def _log_value(key: str, value: Any) -> Any:
    if key in _LOG_BOOLS:
        if not isinstance(value, bool):
            raise InvalidArgumentError(f"{key} must be true or false, got {str(value)[:40]}")
        return value
    if key == "log_verbose_level":
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InvalidArgumentError(f"log_verbose_level must be a non-negative integer, got {str(value)[:40]}")
        return value
    if key == "log_file" and value:
        raise InvalidArgumentError("log_file is not supported: logs go to the server's standard error")
    if key == "log_format" and value not in ("default", "ISO8601"):
        raise InvalidArgumentError(f"log_format must be default or ISO8601, got {str(value)[:40]}")
    return value
