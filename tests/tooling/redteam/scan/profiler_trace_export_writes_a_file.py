"""torch.autograd.profiler.EventList.export_chrome_trace (no reserved name on the way) opens any path for writing, so the file writes files with content it chooses (here an event named by the file)."""
import torch

path = "/tmp/redteam-class2-written.json"
with torch.autograd.profiler.profile() as prof:
    with torch.autograd.profiler.record_function("student chosen text"):
        torch.ones(1) + 1
prof.export_chrome_trace(path)
torch.autograd.profiler.EventList().export_chrome_trace(path + ".empty")
print("wrote", path)
