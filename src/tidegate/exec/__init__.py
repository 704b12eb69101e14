"""tidegate.exec."""
