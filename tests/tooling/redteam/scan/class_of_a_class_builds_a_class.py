"""int.__class__ is type: the same three-argument call, reached through an allowed dunder."""
NAME = "_" * 2 + "del" + "_" * 2
Finalized = int.__class__("Finalized", (), {NAME: lambda self: print("after the guard")})
