"""torch.profiler.ExecutionTraceObserver().register_callback(path) (no reserved name on the way) opens any path for writing, so the file writes files; torch.profiler.tensorboard_trace_handler(dir) does the same through export_chrome_trace."""
import torch

path = "/tmp/redteam-class5-trace.json"
observer = torch.profiler.ExecutionTraceObserver().register_callback(path)
observer.start()
torch.ones(2) + 1
observer.stop()
observer.unregister_callback()
handler = torch.profiler.tensorboard_trace_handler("/tmp/redteam-class5-tb")
with torch.profiler.profile(on_trace_ready=handler) as prof:
    torch.ones(2) * 3
print("written:", path)
