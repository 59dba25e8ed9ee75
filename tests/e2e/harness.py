"""The browser tests' set-up, which the measuring scripts share: it lives in ``ui.browser`` (scripts never import from
``tests/``). These are its names, for the tests that import them from here.
"""

from __future__ import annotations

from ui.browser import (
    CHROMIUM_ARGS,
    CHROMIUM_ENV,
    CHROMIUM_PATH,
    DEBIAN_CHROMIUM,
    LOCAL_HOSTS,
    NO_CHROMIUM,
    ROOT,
    VIEWPORT,
    RunningServer,
    Visit,
    find_chromium,
    free_port,
    health_latencies,
    healthy,
    is_local,
    offline_context,
    playwright_chromium,
    process_memory_mb,
    reset_peak_memory,
    run_async,
    server_command,
    start_server,
    stop,
    visit,
)

__all__ = [
    "CHROMIUM_ARGS",
    "CHROMIUM_ENV",
    "CHROMIUM_PATH",
    "DEBIAN_CHROMIUM",
    "LOCAL_HOSTS",
    "NO_CHROMIUM",
    "ROOT",
    "VIEWPORT",
    "RunningServer",
    "Visit",
    "find_chromium",
    "free_port",
    "health_latencies",
    "healthy",
    "is_local",
    "offline_context",
    "playwright_chromium",
    "process_memory_mb",
    "reset_peak_memory",
    "run_async",
    "server_command",
    "start_server",
    "stop",
    "visit",
]
