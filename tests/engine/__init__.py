"""Engine tests: pure functions, table-driven, one named case per rule branch."""
