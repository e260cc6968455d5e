"""Typed gateway settings: YAML file plus `--set key=value`, spec names, clamped with warnings."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

import yaml

from .safeyaml import BoundedSafeLoader
from .secret_values import register_secrets, secret_values
from .secretfiles import SecretFileError, read_secret_files
from .settings_table import OPEN_KEYS, REMOVED, SETTINGS, Setting
from .settings_unbuilt import built_features, unbuilt_feature, unbuilt_keys
from .settings_unbuilt import pattern as unbuilt_pattern
from .suggest import closest_key

T = TypeVar("T")

log = logging.getLogger(__name__)


class ConfigError(ValueError):
    """A setting that cannot be used; the message names the setting."""


BY_KEY: dict[str, Setting] = {s.key: s for s in SETTINGS}

_OPEN = tuple((unbuilt_pattern(key), feature) for key, feature in OPEN_KEYS)


def _open_key(key: str, built: frozenset[str]) -> bool:
    return any(rx.fullmatch(key) and (need is None or need in built) for rx, need in _OPEN)


def unknown_setting(key: str) -> ConfigError:
    """The refusal of an undeclared key: names the feature it needs, or the closest setting."""
    feature = unbuilt_feature(key, BY_KEY)
    if feature is not None:
        return ConfigError(f"setting '{key}' needs the '{feature}' feature "
                           "(feature not in this build)")
    close = closest_key(key, [*BY_KEY, *unbuilt_keys()])
    hint = f"; did you mean '{close}'?" if close else ""
    return ConfigError(f"unknown setting '{key}'{hint} (`diag-gateway settings` lists "
                       "every setting)")


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mapping to dotted keys; leaves are non-mapping values."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and dotted not in BY_KEY:
            out.update(flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def _coerce(setting: Setting, value: Any) -> Any:
    key, typ = setting.key, setting.type
    if typ is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ConfigError(f"setting '{key}': expected true or false, got {value!r}")
    if typ is int:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ConfigError(f"setting '{key}': expected an integer, got {value!r}")
        try:
            number = float(value)
        except ValueError:
            raise ConfigError(f"setting '{key}': expected an integer, got {value!r}") from None
        if number != int(number):
            raise ConfigError(f"setting '{key}': expected an integer, got {value!r}")
        return int(number)
    if typ is float:
        if isinstance(value, bool):
            raise ConfigError(f"setting '{key}': expected a number, got {value!r}")
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"setting '{key}': expected a number, got {value!r}") from None
    if typ is tuple:
        return _coerce_list(key, value)
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        raise ConfigError(f"setting '{key}': expected a string, got {type(value).__name__}")
    return str(value)


def _coerce_list(key: str, value: Any) -> tuple[str, ...]:
    # A YAML list, or one comma-separated string; the value is never echoed (may be secret).
    if value is None or value == "":
        return ()
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise ConfigError(f"setting '{key}': expected a list of strings")
    out = []
    for item in items:
        if item is None or isinstance(item, (dict, list, tuple)):
            raise ConfigError(f"setting '{key}': every entry must be a string")
        text = str(item).strip()
        if text:
            out.append(text)
    return tuple(out)


def _check(setting: Setting, value: Any, warnings: list[str]) -> Any:
    key = setting.key
    if setting.choices is not None and value not in setting.choices:
        raise ConfigError(
            f"setting '{key}': {value!r} is not one of {', '.join(setting.choices)}"
        )
    lo, hi = setting.minimum, setting.maximum
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            if not setting.clamp:
                raise ConfigError(f"setting '{key}': {value} is outside {lo:g}..{hi:g}")
            clamped = min(max(value, lo if lo is not None else value),
                          hi if hi is not None else value)
            clamped = setting.type(clamped)
            warnings.append(f"setting '{key}': {value} is outside {lo:g}..{hi:g}; using {clamped}")
            return clamped
    return value


class Settings:
    """Resolved settings: defaults, then the YAML file, then `--set` overrides."""

    def __init__(self, values: dict[str, Any], warnings: list[str]) -> None:
        self._values = values
        self.warnings = warnings
        self._typed: dict[Callable[[Settings], Any], Any] = {}

    def typed(self, build: Callable[[Settings], T]) -> T:
        """A feature's typed settings (its frozen dataclass's `from_settings`), built once per
        resolved settings: the values never change after load."""
        try:
            return cast(T, self._typed[build])
        except KeyError:
            out = self._typed[build] = build(self)
            return out

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def get(self, key: str, default: Any = None) -> Any:
        """Value of a setting, or default for an unset open-prefix key."""
        return self._values.get(key, default)

    def section(self, prefix: str) -> dict[str, Any]:
        """All keys under prefix (e.g. 'aggregation.'), without the prefix."""
        return {k[len(prefix):]: v for k, v in self._values.items() if k.startswith(prefix)}

    def as_dict(self, redact: bool = True) -> dict[str, Any]:
        """All values; secrets replaced by '***' when redact."""
        out = dict(self._values)
        if redact:
            for key in out:
                setting = BY_KEY.get(key)
                if (setting and setting.secret) or key in ("auth.jwt_secret", "auth.clients"):
                    out[key] = "***"
        return out

    @property
    def vendor(self) -> str:
        """The vendor word."""
        return str(self._values["api.vendor"])


def parse_override(text: str) -> tuple[str, Any]:
    """`key=value` with the value read as YAML (so 8080 is an int and true a bool)."""
    if "=" not in text:
        raise ConfigError(f"--set {text!r}: expected key=value")
    key, _, raw = text.partition("=")
    key = key.strip()
    if not key:
        raise ConfigError(f"--set {text!r}: the key is empty")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key, value


def load(path: str | Path | None = None, overrides: Iterable[str] = ()) -> Settings:
    """Resolve settings; ConfigError names the first bad setting."""
    raw: dict[str, Any] = {}
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"--config {path}: cannot read: {exc.strerror}") from None
        try:  # nesting and alias expansion capped, as for manifests (a YAML bomb refused)
            tree = yaml.load(text, Loader=BoundedSafeLoader) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"--config {path}: not valid YAML: {exc}") from None
        if not isinstance(tree, Mapping):
            raise ConfigError(f"--config {path}: the top level must be a mapping of settings")
        raw.update(flatten(tree))
    for item in overrides:
        key, value = parse_override(item)
        raw[key] = value
    return resolve(raw)


def _read_secret_files(values: dict[str, Any], warnings: list[str]) -> None:
    """Secret settings given by their `<key>_file` twins (gateway/settings/secretfiles.py)."""
    try:
        read = read_secret_files(values, [s.key for s in SETTINGS if s.secret])
    except SecretFileError as exc:
        raise ConfigError(str(exc)) from None
    for key, value in read.items():
        values[key] = _check(BY_KEY[key], _coerce(BY_KEY[key], value), warnings)


def resolve(raw: Mapping[str, Any]) -> Settings:
    """Validate dotted raw values against SETTINGS."""
    warnings: list[str] = []
    values = {s.key: s.default for s in SETTINGS}
    for key, value in raw.items():
        if key in REMOVED:
            warnings.append(f"setting '{key}' was removed from the interface; ignored")
            continue
        setting = BY_KEY.get(key)
        if setting is None:
            if _open_key(key, built_features(BY_KEY)):
                values[key] = value
                continue
            raise unknown_setting(key)
        values[key] = _check(setting, _coerce(setting, value), warnings)
    _read_secret_files(values, warnings)
    if values["discovery.mode"] != "runtime_only" and not values["discovery.manifest_path"]:
        raise ConfigError(
            f"setting 'discovery.mode': {values['discovery.mode']!r} needs a manifest; set "
            "'discovery.manifest_path'"
        )
    if values["discovery.mode"] == "runtime_only" and values["discovery.inventory.csv_path"]:
        warnings.append("setting 'discovery.inventory.csv_path' is read only in the "
                        "manifest-backed modes (hybrid, manifest_only); ignored")
    if values["api.profile"] == "medkit" and "api.vendor" not in raw:
        values["api.vendor"] = "medkit"  # wire profile: the reference's vendor word
    vendor = values["api.vendor"]
    if not vendor or not vendor.replace("-", "").isalnum() or not vendor.islower():
        raise ConfigError(
            f"setting 'api.vendor': {vendor!r} must be a lower-case word (letters, digits, '-')"
        )
    for message in warnings:
        log.warning("%s", message)
    settings = Settings(values, warnings)
    # Children (scripts, update hooks) never see a secret (gateway/settings/secret_values.py).

    register_secrets(secret_values(settings))
    return settings
