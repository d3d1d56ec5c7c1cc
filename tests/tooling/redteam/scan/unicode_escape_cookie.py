# -*- coding: unicode_escape -*-
import torch
# \u000aimport sys; print("unicode_escape cookie reached", sys, len(sys.modules))
x = 1
