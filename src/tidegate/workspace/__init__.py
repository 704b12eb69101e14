"""tidegate.workspace."""
