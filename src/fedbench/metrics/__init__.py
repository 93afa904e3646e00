"""Results schema and communication accounting."""
