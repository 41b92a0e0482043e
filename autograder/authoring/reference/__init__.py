"""Hidden reference solutions, generated from the source notebooks."""
