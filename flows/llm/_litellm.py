"""The one place litellm is imported: lazily (1.7 s), offline, quiet, with the collector paused.

The environment variables must be set before the first import: litellm fetches its price map
from GitHub at import unless told it is offline, and logs at INFO. ``setdefault`` leaves a
user's explicit choice alone. The import runs inside :func:`flows.heap.heavy_imports`: with the
garbage collector on it took 2.7 s, six full collections walking the objects it was making.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from flows.heap import heavy_imports

_QUIET_ENV = {
    "LITELLM_OFFLINE_MODE": "true",          # no price-map download, no blog/beta-header fetches
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # the same for older litellm versions
    "LITELLM_LOG": "ERROR",
    "LITELLM_TELEMETRY": "False",
}

_module: Any = None
_lock = threading.Lock()


def litellm() -> Any:
    """The configured ``litellm`` module (imported on first use)."""
    global _module
    if _module is None:
        with _lock:
            if _module is None:
                for key, value in _QUIET_ENV.items():
                    os.environ.setdefault(key, value)
                with heavy_imports(garbage=True):
                    import litellm as mod

                mod.suppress_debug_info = True  # no "Give Feedback / Get Help" banner on errors
                mod.telemetry = False
                # Any model string should work: parameters a provider does not take (e.g. a
                # temperature on a reasoning model) are dropped instead of failing the call.
                mod.drop_params = True
                # Ergon is the only retry loop. The OpenAI and Azure embedding calls read
                # `max_retries or DEFAULT_MAX_RETRIES` (an explicit 0 is lost), so without this the
                # SDK would retry each embedding attempt twice on its own.
                mod.DEFAULT_MAX_RETRIES = 0  # type: ignore[misc]  # typed Final, but read at call time
                _module = mod
    return _module
