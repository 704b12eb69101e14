"""tidegate.mcp."""
