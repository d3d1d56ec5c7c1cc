"""copy.dispatch_table (listed for the restricted copy module) is copyreg's process-wide table, so writing to it installs a student-chosen reduce hook (a __reduce__ by another name) on any class, torch.Tensor included, which copy and the grader's own pickling then call."""
import copy
import torch


def reducer(tensor):
    print("student reduce hook called for a", tensor.__class__.__name__)
    return (print, ("unpickling runs this call, chosen by the student",))


copy.dispatch_table[torch.Tensor] = reducer
copy.copy(torch.zeros(2))
