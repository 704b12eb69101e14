"""tidegate.disk."""
