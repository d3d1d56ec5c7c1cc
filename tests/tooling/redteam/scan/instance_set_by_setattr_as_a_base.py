"""A base written torch.seed_holder, an attribute that setattr (literal name, not counted as the file's own) bound to an instance, passes the named-class rule, so Python calls the instance's class with the class body, as a metaclass."""
import torch


class Hook:
    def __init__(self, name, bases, namespace):
        print("called as a metaclass with", name, sorted(namespace))


setattr(torch, "seed_holder", Hook("seed", (), {}))


class Shape(torch.seed_holder):
    width = 3


print("Shape is not a class:", Shape)
