"""Pydantic input and output models of the 21 canonical tools, one module per family."""

from tidegate.tools.schemas.base import ToolInput, ToolOutput, json_schema

__all__ = ["ToolInput", "ToolOutput", "json_schema"]
