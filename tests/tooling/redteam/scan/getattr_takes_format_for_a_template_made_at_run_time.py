"""getattr(str, "format") passed as a literal name; the bound method then formats a template built at run time,
whose fields read attributes by name: torch.sys.modules and the guard's state, as text."""
import torch

fmt = getattr(str, "format")
TEMPLATE = "{0." + "sys.modules[grader.sandbox.guard]._STATE}"
STATE = fmt(TEMPLATE, torch)
