"""Entity resolution errors: invalid id, unknown entity, wrong entity type for the route."""

from __future__ import annotations

from typing import Any

from ..errors import (
    NOT_IMPLEMENTED,
    ApiError,
    http_layer_error,
    invalid_parameter,
    not_found,
)
from ..model.entities import ENTITY_PARAM, SINGULAR
from ._base import WireBase

ENTITY_NOT_FOUND = "entity-not-found"
# 501 messages of absent features in the reference implementation's words (medkit-wire.md
# section 13); the gateway's own hint goes in parameters.details.
FEATURE_ABSENT = {
    "data-categories": "Data categories are not implemented for ROS 2",
    "data-groups": "Data groups are not implemented for ROS 2",
    "updates": "Software updates not available",
    "updates-backend": "Software updates backend not configured",
    "scripts": "Scripts backend not configured",
    "locks": "Locking is not enabled on this gateway",
    "lifecycle": "Lifecycle control not available for this entity",
    "triggers": "Triggers not available",
    "fault-triggers": "Fault triggers not available",
    "docs": "Capability description is disabled",
}


class SpecErrors(WireBase):
    """The spec's answers: 404 resource-not-found for unknown entities and wrong types."""

    def invalid_entity_id(self, entity_id: str, details: str,
                          nested_param: str | None = None) -> ApiError:
        """400 invalid-parameter for an id outside the spec's charset (both profiles);
        `nested_param` names the id's path parameter on a nested discovery route."""
        return invalid_parameter(f"Invalid entity ID '{entity_id}': {details}",
                                 details=details, entity_id=entity_id)

    def unknown_entity(self, kind: str, entity_id: str, relation: bool = False,
                       nested: bool = False) -> ApiError:
        """404 for an entity id no entity of the route's type has (`nested`: a nested
        discovery route such as /areas/{id}/subareas)."""
        word = SINGULAR[kind]
        if relation:  # spec rule 5: relationship routes name the app
            return not_found(f"{word.capitalize()} not found", **{ENTITY_PARAM[kind]: entity_id})
        return not_found(f"{word.capitalize()} not found: '{entity_id}'",
                         entity_id=entity_id, **{ENTITY_PARAM[kind]: entity_id})

    def wrong_entity_type(self, kind: str, entity_id: str, actual: str) -> ApiError:
        """The id names an entity of another type: the spec has no such case, so 404."""
        return self.unknown_entity(kind, entity_id)

    def operation_not_found(self, entity_id: str, operation_id: str, message: str) -> ApiError:
        """404 for an operation id the entity does not have."""
        return not_found(message, entity_id=entity_id, operation_id=operation_id)


    def execution_not_found(self, entity_id: str, operation_id: str, execution_id: str,
                            message: str) -> ApiError:
        """404 for an execution id the operation does not track."""
        return not_found(message, entity_id=entity_id, operation_id=operation_id,
                         execution_id=execution_id)

    def execution_of_unknown_operation(self, err: ApiError, entity_id: str,
                                       execution_id: str) -> ApiError:
        """An execution route naming an operation the entity lacks: the operation's 404."""
        return err


    def unsupported_collection(self, kind: str, entity_id: str,
                               collection: str) -> ApiError | None:
        """A collection only other entity types serve: None (the router's 404)."""
        return None

    def method_not_served(self, method: str, path: str, allowed: str) -> ApiError:
        """405 with Allow for a method the path does not serve."""
        err = http_layer_error(405, f"Method {method} is not allowed on {path}; "
                                    f"allowed: {allowed}")
        err.headers = {"Allow": allowed}
        return err

    def feature_absent(self, feature: str, details: str, **parameters: Any) -> ApiError:
        """501 not-implemented in the reference's words; `details` says how to turn it on."""
        message = FEATURE_ABSENT[feature]
        word = feature.split("-backend")[0]
        return ApiError(501, NOT_IMPLEMENTED, message,
                        parameters={"feature": word, "details": details, **parameters})


class MedkitErrors(SpecErrors):
    """The reference's codes: entity-not-found, operation-not-found, 400 for a wrong type."""

    profile = "medkit"

    def invalid_entity_id(self, entity_id: str, details: str,
                          nested_param: str | None = None) -> ApiError:
        """400 invalid-parameter "Invalid entity ID" with details and the id ("Invalid area
        ID" with `area_id` on nested discovery routes, as the reference words it)."""
        if nested_param:
            label = nested_param.removesuffix("_id")
            return invalid_parameter(f"Invalid {label} ID", details=details,
                                     **{nested_param: entity_id, "entity_id": entity_id})
        return invalid_parameter("Invalid entity ID", details=details, entity_id=entity_id)

    def unknown_entity(self, kind: str, entity_id: str, relation: bool = False,
                       nested: bool = False) -> ApiError:
        """404 entity-not-found "Entity not found" naming the id ("Area not found" etc. on
        nested discovery routes)."""
        params: dict[str, Any] = {"entity_id": entity_id, ENTITY_PARAM[kind]: entity_id}
        message = f"{SINGULAR[kind].capitalize()} not found" if nested else "Entity not found"
        return ApiError(404, ENTITY_NOT_FOUND, message, parameters=params)

    def wrong_entity_type(self, kind: str, entity_id: str, actual: str) -> ApiError:
        """400 invalid-parameter naming the expected and the actual type."""
        expected, got = SINGULAR[kind].capitalize(), SINGULAR[actual].capitalize()
        return invalid_parameter(
            f"Invalid entity type for route: expected {expected}, got {got}",
            entity_id=entity_id, expected_type=expected, actual_type=got)

    def operation_not_found(self, entity_id: str, operation_id: str, message: str) -> ApiError:
        """404 operation-not-found "Operation not found"."""
        return ApiError(404, "operation-not-found", "Operation not found",
                        parameters={"entity_id": entity_id, "operation_id": operation_id})


    def execution_not_found(self, entity_id: str, operation_id: str, execution_id: str,
                            message: str) -> ApiError:
        """404 resource-not-found "Execution not found"."""
        return super().execution_not_found(entity_id, operation_id, execution_id,
                                           "Execution not found")

    def execution_of_unknown_operation(self, err: ApiError, entity_id: str,
                                       execution_id: str) -> ApiError:
        """404 "Execution not found": the reference finds no execution before the operation."""
        if err.error_code != "operation-not-found":  # an ambiguous id keeps its candidates
            return err
        operation_id = str((err.parameters or {}).get("operation_id", ""))
        return self.execution_not_found(entity_id, operation_id, execution_id, "")


    def method_not_served(self, method: str, path: str, allowed: str) -> ApiError:
        """404, as the reference's router answers a method no handler serves on a path."""
        return http_layer_error(404, f"No resource at {path} for method {method} "
                                     f"(served methods: {allowed})")

    def unsupported_collection(self, kind: str, entity_id: str,
                               collection: str) -> ApiError | None:
        """400 collection-not-supported naming the type and the collection."""
        return ApiError(400, "collection-not-supported",
                        f"{SINGULAR[kind].capitalize()} entities do not support {collection} "
                        "collection", parameters={"entity_id": entity_id,
                                                  "collection": collection})


ErrorWire = SpecErrors
ERRORS: dict[str, type[SpecErrors]] = {"spec": SpecErrors, "medkit": MedkitErrors}
