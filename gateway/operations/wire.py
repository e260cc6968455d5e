"""Operation shapes: item, execution status, and the answers of execution starts and controls."""

from __future__ import annotations

from typing import Any

from ..errors import ApiError, invalid_parameter, not_responding, vendor_error
from ..wire._base import WireBase

# Executions and call errors come from gateway/ros (imported when used: the wire bundle itself
# imports without ROS).
Execution = Any
CallError = Exception

class SpecOperations(WireBase):
    """The spec's flat `ros2_*` keys with the reference's nested `ros2{}` beside them."""

    # DELETE of an execution: False removes it (spec), True keeps it readable.
    keep_after_delete = False

    def ros2_status(self, ex: Execution) -> str:
        """The goal status name (upper case, as action_msgs names it)."""
        from ..ros.calls.actions import ros_status_name  # noqa: PLC0415 - rclpy only once ROS runs

        return ros_status_name(ex.ros_status, ex.rejected)

    def item(self, op: Any, entity_id: str, type_info: Any = None,
             schema: Any = None) -> dict[str, Any]:
        """One operation description (list item; the detail wraps it in `item`)."""
        xv: dict[str, Any] = {"ros2_kind": op.kind, f"ros2_{op.kind}": op.path,
                              "ros2_type": op.type, "member_ids": op.member_ids,
                              "ros2": {"kind": op.kind, op.kind: op.path, "type": op.type},
                              "entity_id": entity_id,
                              "source": self.product_name("source")}
        item: dict[str, Any] = {
            "id": op.id, "name": op.name, "proximity_proof_required": False,
            "asynchronous_execution": op.kind == "action", "type": op.kind,
            f"{op.kind}_type": op.type,
        }
        if type_info is not None:
            xv["type_info"] = type_info
            item["schema"] = schema
        item[self.xv] = xv
        return item

    def execution(self, ex: Execution) -> dict[str, Any]:
        """An execution's status: feedback while running, the result once finished."""
        xv: dict[str, Any] = {"goal_id": ex.id, "ros2_status": self.ros2_status(ex),
                              "ros2_action": ex.action, "ros2_type": ex.type_name,
                              "ros2": {"action": ex.action, "type": ex.type_name},
                              "feedback_count": ex.feedback_count}
        if ex.reason:
            xv["reason"] = ex.reason
        if ex.cancel_response:
            xv["cancel_response"] = ex.cancel_response
        body: dict[str, Any] = {"id": ex.id, "status": ex.status, "capability": ex.capability}
        params = ex.result if ex.finished and ex.result is not None else ex.feedback
        if params is not None:
            body["parameters"] = params
        if ex.finished and ex.result is not None:  # the spec allows `result`; clients read it
            body["result"] = ex.result
            xv["result"] = ex.result
        body[self.xv] = xv
        return body

    def call_error(self, exc: CallError, **parameters: Any) -> ApiError:
        """A call that produced no answer: 504 timeout, 503 off the graph, 500 otherwise."""
        from ..ros.calls.services import (  # noqa: PLC0415 - rclpy only once ROS runs
            CallTimeout,
            NotAvailable,
        )

        if isinstance(exc, CallTimeout):
            return not_responding(str(exc), timeout_sec=exc.budget_s, **parameters)
        if isinstance(exc, NotAvailable):
            return vendor_error(503, "x-vendor-ros2-node-unavailable", str(exc), **parameters)
        return vendor_error(500, "x-vendor-ros2-service-unavailable", str(exc), **parameters)

    def start_error(self, kind: str, exc: CallError, **parameters: Any) -> ApiError:
        """The error of an execution start whose call produced no answer."""
        return self.call_error(exc, **parameters)

    def goal_rejected(self, ex: Execution, **parameters: Any) -> ApiError | None:
        """The answer to a goal the server refused: none (202 with a failed execution)."""
        return None

    def capability_refused(self, capability: str, why: str) -> ApiError:
        """400 for an execution PUT capability other than stop."""
        return invalid_parameter(f"Capability '{capability}' {why}; only 'stop' is supported",
                                 field="capability", capability=capability,
                                 supported_capabilities=["stop"])


class MedkitOperations(SpecOperations):
    """The reference's lower-case ros2_status, 500 start failures, 409 execute, kept executions."""

    profile = "medkit"
    keep_after_delete = True

    def ros2_status(self, ex: Execution) -> str:
        """The goal status name in lower case."""
        return super().ros2_status(ex).lower()

    def start_error(self, kind: str, exc: CallError, **parameters: Any) -> ApiError:
        """500 with the service or action unavailable vendor code."""
        if kind == "service":
            return vendor_error(500, "x-vendor-ros2-service-unavailable", "Service call failed",
                                details=str(exc), **parameters)
        return vendor_error(500, "x-vendor-ros2-action-unavailable", "Action execution failed",
                            details=str(exc), **parameters)

    def goal_rejected(self, ex: Execution, **parameters: Any) -> ApiError | None:
        """400 action-rejected."""
        return vendor_error(400, "x-vendor-ros2-action-rejected", "Goal rejected",
                            details=ex.reason or "the action server rejected the goal",
                            **parameters)

    def capability_refused(self, capability: str, why: str) -> ApiError:
        """409 precondition-not-fulfilled for execute; 400 for the others."""
        if capability == "execute":
            return ApiError(409, "precondition-not-fulfilled",
                            "Cannot re-execute while operation is running. Cancel first, then "
                            "start new execution.", parameters={"capability": capability})
        return super().capability_refused(capability, why)


OperationWire = SpecOperations
OPERATIONS: dict[str, type[SpecOperations]] = {"spec": SpecOperations,
                                               "medkit": MedkitOperations}
