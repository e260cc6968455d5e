"""Typed settings: a frozen dataclass per prefix whose fields are the table's keys under it."""

from __future__ import annotations

from dataclasses import fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from .settings_table import SETTINGS

if TYPE_CHECKING:
    from .config import Settings

T = TypeVar("T", bound="TableSettings")


def field_name(key: str, prefix: str) -> str:
    """The field a key fills: the key after the prefix, dots as underscores."""
    return key[len(prefix):].replace(".", "_")


def table_keys(prefix: str) -> dict[str, str]:
    """field name -> key, for every table key under the prefix."""
    return {field_name(s.key, prefix): s.key for s in SETTINGS if s.key.startswith(prefix)}


class TableSettings:
    """Base of a package's typed settings (a frozen dataclass, `settings.typed(X.from_settings)`):
    each field holds the table key `PREFIX` + its name (dots as underscores), an `OPEN` field
    the read-only mapping of the open keys under its prefix."""

    PREFIX: ClassVar[str] = ""
    OPEN: ClassVar[dict[str, str]] = {}

    @classmethod
    def keys(cls) -> dict[str, str]:
        """field name -> the table key it holds (open-key fields left out)."""
        named = table_keys(cls.PREFIX)
        return {f.name: named[f.name] for f in fields(cls)  # type: ignore[arg-type]
                if f.init and f.name not in cls.OPEN}

    @classmethod
    def from_settings(cls: type[T], s: Settings) -> T:
        """From the resolved settings (their types and ranges are checked at load)."""
        values: dict[str, Any] = {name: s[key] for name, key in cls.keys().items()}
        for name, prefix in cls.OPEN.items():
            values[name] = MappingProxyType(s.section(prefix))
        return cls(**values)
