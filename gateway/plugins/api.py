"""The plugin API: the base class, provider protocols, routes and errors a plugin uses."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .context import PluginContext

#: Version of this API; a plugin declaring another `api_version` is refused at load.
PLUGIN_API_VERSION = 1
#: Entry point group a plugin package registers its Plugin class (or factory) under.
ENTRY_POINT_GROUP = "diag_gateway.plugins"

# Provider kinds, the keys of Plugin.providers().
INTROSPECTION = "introspection"
DATA = "data"
OPERATIONS = "operations"
FAULTS = "faults"
LOGS = "logs"
UPDATES = "updates"
SCRIPTS = "scripts"
LIFECYCLE = "lifecycle"
PROVIDER_KINDS = (INTROSPECTION, DATA, OPERATIONS, FAULTS, LOGS, UPDATES, SCRIPTS, LIFECYCLE)


class PluginError(Exception):
    """A provider failure answered with the plugin error body and a suggested status."""

    status = 500
    vendor_code = "x-vendor-plugin-error"
    #: A spec error code answered instead of the plugin error body (subclasses below).
    error_code: str | None = None

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class NotFound(PluginError):
    """The named item does not exist (404)."""

    status = 404


class AlreadyExists(PluginError):
    """The item exists already (400)."""

    status = 400


class InvalidInput(PluginError):
    """The request cannot be served as given (400)."""

    status = 400


class AccessDenied(PluginError):
    """The device refuses the caller (403 insufficient-access-rights)."""

    status = 403
    error_code = "insufficient-access-rights"


class PreconditionFailed(PluginError):
    """The item is not in a state that allows the request (409 precondition-not-fulfilled)."""

    status = 409
    error_code = "precondition-not-fulfilled"


class Unsupported(PluginError):
    """The provider does not offer this for the entity (501, the gateway's feature-absent body)."""

    status = 501
    error_code = "not-implemented"

    def __init__(self, message: str, feature: str = "plugin") -> None:
        super().__init__(message)
        self.feature = feature  # the body's `parameters.feature`


@dataclass(frozen=True)
class PluginRoute:
    """One route a plugin serves; `path` is OpenAPI style below /api/v1 with an `x-` segment.

    The handler takes the aiohttp request and returns a `web.StreamResponse` or a
    JSON-serializable value (answered 200); it may be sync (run in a worker thread) or async.
    `response`/`request` name the bodies' schemas in /docs (declared in `schemas`, JSON
    Schema by name); undeclared ones are documented as the generic PluginResponse/Request.
    """

    method: str
    path: str
    handler: Callable[..., Any]
    summary: str = ""
    params: dict[str, str] = field(default_factory=dict)
    response: str | None = None
    request: str | None = None
    schemas: dict[str, Any] = field(default_factory=dict)


class Plugin:
    """Base class of a plugin; override what the plugin offers."""

    api_version: int = PLUGIN_API_VERSION
    #: The name it was loaded under (set by the loader before configure()).
    name: str = ""

    def configure(self, config: dict[str, Any]) -> None:
        """Receive the `plugins.<name>.*` settings (keys without the prefix)."""

    def set_context(self, ctx: PluginContext) -> None:
        """Receive the gateway context (entity lookup, faults, ROS queries, events)."""

    def providers(self) -> dict[str, Any]:
        """Provider objects by kind (PROVIDER_KINDS)."""
        return {}

    def routes(self) -> list[PluginRoute]:
        """Routes this plugin serves (admin-only when auth is on)."""
        return []

    async def start(self) -> None:
        """Called once the gateway's ROS side runs."""

    async def shutdown(self) -> None:
        """Called when the gateway stops."""


# Provider protocols. Every method may be a plain function (run in a worker thread with a
# timeout) or a coroutine function (awaited with a timeout); raise PluginError subclasses.


@runtime_checkable
class IntrospectionProvider(Protocol):
    """Adds entities: {"areas"|"components"|"apps"|"functions": [{id, name, ...}]}."""

    def introspect(self) -> dict[str, list[dict[str, Any]]] | Awaitable[Any]: ...


@runtime_checkable
class DataProvider(Protocol):
    """Data items of the entities the plugin owns."""

    def list_data(self, entity_id: str) -> list[dict[str, Any]] | Awaitable[Any]: ...

    def read_data(self, entity_id: str, data_id: str) -> Any: ...

    def write_data(self, entity_id: str, data_id: str, value: Any) -> Any: ...


@runtime_checkable
class OperationProvider(Protocol):
    """Operations of the entities the plugin owns."""

    def list_operations(self, entity_id: str) -> list[dict[str, Any]] | Awaitable[Any]: ...

    def execute(self, entity_id: str, op_id: str, parameters: dict[str, Any]) -> Any: ...


@runtime_checkable
class FaultProvider(Protocol):
    """Faults of the entities the plugin owns (`/{type}/{id}/faults[...]` of its entities).

    Items are fault list items (`fault_code`, `severity`, `message`, ...); `get_fault` answers
    the detail body; `clear_fault` clears one code (raise NotFound for an unknown one).
    """

    def list_faults(self, entity_id: str) -> Any: ...

    def get_fault(self, entity_id: str, code: str) -> Any: ...

    def clear_fault(self, entity_id: str, code: str) -> Any: ...


@runtime_checkable
class LogProvider(Protocol):
    """Log entries of the entities the plugin owns (`GET /{type}/{id}/logs`).

    Entries: `{timestamp, severity, message, context?}`, oldest first; the gateway applies
    the entity's log configuration (severity_filter, max_entries).
    """

    def list_logs(self, entity_id: str) -> Any: ...


class ProgressReporter(Protocol):
    """Progress of one update operation."""

    def set_progress(self, percent: int) -> None: ...

    def set_sub_progress(self, items: list[dict[str, Any]]) -> None: ...


@runtime_checkable
class UpdateProvider(Protocol):
    """Software update packages (the first plugin offering one wins)."""

    def list_updates(self, filters: dict[str, str]) -> Any: ...

    def get_update(self, update_id: str) -> Any: ...

    def register_update(self, metadata: dict[str, Any]) -> Any: ...

    def delete_update(self, update_id: str) -> Any: ...

    def prepare(self, update_id: str, reporter: ProgressReporter) -> Any: ...

    def execute(self, update_id: str, reporter: ProgressReporter) -> Any: ...

    def supports_automated(self, update_id: str) -> Any: ...


@runtime_checkable
class ScriptProvider(Protocol):
    """Scripts of the entities the plugin owns (`/{type}/{id}/scripts[...]`).

    Optional methods: `get_script`, `list_executions`, `upload_script(entity, filename,
    content, metadata)`, `delete_script`, `delete_execution` (absent: answered 400 or from
    `list_scripts`). Executions are `{id, status, progress?, started_at?, completed_at?,
    parameters?, error?}`.
    """

    def list_scripts(self, entity_id: str) -> Any: ...

    def execute_script(self, entity_id: str, script_id: str, request: dict[str, Any]) -> Any: ...

    def get_execution(self, entity_id: str, script_id: str, execution_id: str) -> Any: ...

    def control_execution(self, entity_id: str, script_id: str, execution_id: str,
                          action: str) -> Any: ...


@runtime_checkable
class LifecycleProvider(Protocol):
    """Lifecycle control of the entities the plugin owns (`/{type}/{id}/status[...]`).

    `status` answers `{status: ready|notReady, <transition>: true, ...}`; the advertised
    transitions become links to the gateway's transition routes.
    """

    def request_transition(self, entity_id: str, transition: str) -> Any: ...

    def status(self, entity_id: str) -> Any: ...


PROTOCOLS: dict[str, type] = {
    INTROSPECTION: IntrospectionProvider, DATA: DataProvider, OPERATIONS: OperationProvider,
    FAULTS: FaultProvider, LOGS: LogProvider, UPDATES: UpdateProvider, SCRIPTS: ScriptProvider,
    LIFECYCLE: LifecycleProvider,
}
