"""The window manager for a window's configuration, with Storm's policies for it."""

from __future__ import annotations

from typing import Any

from engine.windowing.manager import WindowManager
from engine.windowing.policies import (
    CountEviction,
    CountTrigger,
    TimeEviction,
    TimeTrigger,
    WatermarkCountEviction,
    WatermarkCountTrigger,
    WatermarkTimeEviction,
    WatermarkTimeTrigger,
)
from engine.windowing.spec import Count, Duration, WindowSpec

__all__ = ["build_manager"]


def build_manager(spec: WindowSpec) -> WindowManager:
    """The window manager with Storm's policies for ``spec``."""
    length, slide = spec.length, spec.slide
    if isinstance(length, Count):
        eviction: Any = (WatermarkCountEviction(length.value) if spec.event_time
                         else CountEviction(length.value))
    else:
        assert isinstance(length, Duration)
        eviction = (WatermarkTimeEviction(length.millis, spec.lag_ms) if spec.event_time
                    else TimeEviction(length.millis))
    if isinstance(slide, Count):
        trigger: Any = WatermarkCountTrigger if spec.event_time else CountTrigger
        n = slide.value
    else:
        trigger = WatermarkTimeTrigger if spec.event_time else TimeTrigger
        n = slide.millis
    return WindowManager(eviction, lambda m, e: trigger(n, m, e))
