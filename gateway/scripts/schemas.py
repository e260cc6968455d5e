"""OpenAPI component schemas of the script routes."""

from __future__ import annotations

from typing import Any

_TS = {"type": "string", "format": "date-time"}
_STR = {"type": "string"}

SCHEMAS: dict[str, Any] = {
    "ScriptUpload": {
        "type": "object",
        "required": ["file"],
        "properties": {
            "file": {"type": "string", "format": "binary",
                     "description": "the script; extension .sh, .bash or .py"},
            "metadata": {"type": "string", "description": "JSON: name, description, "
                                                          "parameters_schema"},
        },
    },
    "ScriptCreated": {
        "type": "object", "required": ["id", "name"],
        "properties": {"id": _STR, "name": _STR},
    },
    "Script": {
        "type": "object",
        "required": ["id", "name", "managed"],
        "properties": {
            "id": _STR, "name": _STR, "description": _STR, "managed": {"type": "boolean"},
            "parameters_schema": {"type": "object"}, "href": _STR,
        },
    },
    "ScriptList": {
        "type": "object",
        "required": ["items"],
        "properties": {"items": {"type": "array",
                                 "items": {"$ref": "#/components/schemas/Script"}}},
    },
    "ScriptExecutionRequest": {
        "type": "object",
        "required": ["execution_type"],
        "properties": {
            "execution_type": {"enum": ["now", "on_restart", "now_and_on_restart",
                                        "once_on_restart"],
                               "description": "only now on the built-in backend"},
            "parameters": {"type": "object"},
            "proximity_response": _STR,
        },
    },
    "ScriptExecution": {
        "type": "object",
        "required": ["id", "status"],
        "properties": {
            "id": _STR,
            "status": {"enum": ["prepared", "running", "completed", "failed", "terminated"]},
            "progress": {"type": "integer", "minimum": 0, "maximum": 100},
            "started_at": _TS, "completed_at": _TS,
            "parameters": {"type": "object", "properties": {
                "stdout": _STR, "stderr": _STR, "exit_code": {"type": "integer"}}},
            "error": {"type": "object", "properties": {"error_code": _STR, "message": _STR}},
        },
    },
    "ScriptExecutionList": {
        "type": "object",
        "required": ["items"],
        "properties": {"items": {"type": "array",
                                 "items": {"$ref": "#/components/schemas/ScriptExecution"}}},
    },
    "ScriptExecutionControl": {
        "type": "object",
        "required": ["action"],
        "properties": {"action": {"enum": ["stop", "forced_termination"]}},
    },
}
