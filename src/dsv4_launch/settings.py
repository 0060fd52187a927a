"""dsv4-launch's own settings, read from ``DSV4_LAUNCH_*`` environment variables (pure)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Mapping, Optional

from .gpus import parse_capability
from .records import record

TRUE = {"1", "true", "yes", "on"}
FALSE = {"", "0", "false", "no", "off"}
PREFLIGHT_MODES = ("refuse", "warn", "off")


class SettingsError(ValueError):
    """A DSV4_LAUNCH_* variable holds a value dsv4-launch cannot use."""


@record
class Settings:
    disabled: bool = False  # DSV4_LAUNCH_DISABLE
    quiet: bool = False  # DSV4_LAUNCH_QUIET
    gpu_capabilities: Optional[tuple[tuple[int, int], ...]] = None  # DSV4_LAUNCH_GPU_CAPABILITY
    gpu_capability_text: Optional[str] = None
    preflight: str = "refuse"  # DSV4_LAUNCH_PREFLIGHT: refuse, warn, off


def _flag(env: Mapping[str, str], name: str) -> bool:
    raw = env.get(name)
    if raw is None:
        return False
    value = raw.strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise SettingsError(f"{name}={raw!r} is not understood; use 1 (on) or 0 (off)")


def read_settings(env: Mapping[str, str]) -> Settings:
    caps = None
    text = env.get("DSV4_LAUNCH_GPU_CAPABILITY")
    if text is not None and text.strip():
        try:
            caps = tuple(parse_capability(part) for part in text.split(",") if part.strip())
        except ValueError:
            raise SettingsError(
                f"DSV4_LAUNCH_GPU_CAPABILITY={text!r} is not a compute capability; use e.g. "
                "12.0 (RTX PRO 6000), 10.0 (B200) or 9.0 (H100/H200), comma-separated per GPU"
            ) from None
    preflight = (env.get("DSV4_LAUNCH_PREFLIGHT") or "refuse").strip().lower()
    if preflight not in PREFLIGHT_MODES:
        raise SettingsError(
            f"DSV4_LAUNCH_PREFLIGHT={env['DSV4_LAUNCH_PREFLIGHT']!r} is not understood; use "
            "refuse (default), warn or off"
        )
    return Settings(
        preflight=preflight,
        disabled=_flag(env, "DSV4_LAUNCH_DISABLE"),
        quiet=_flag(env, "DSV4_LAUNCH_QUIET"),
        gpu_capabilities=caps,
        gpu_capability_text=text.strip() if caps else None,
    )
