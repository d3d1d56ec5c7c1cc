"""What the graded suites share: seeded inputs, the torch oracle, assertions that explain themselves, the
known mistakes they name, and MultiHeadAttention's and the efficiency task's checks."""
