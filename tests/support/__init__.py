"""What the graded suites share: seeded inputs, the torch oracle, assertions that explain themselves, the
known mistakes they name, and one module per task that needs more (heads, divisibility, mha, efficiency,
tiled, kv_cache)."""
