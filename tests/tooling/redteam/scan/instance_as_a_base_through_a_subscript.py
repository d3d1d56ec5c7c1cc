"""A subscripted base is checked by its subscripted name only (Union), and Union[seed] with one argument is seed itself, so an instance becomes a base and Python calls its own class Hook with the class body, as a metaclass."""
from typing import Union


class Hook:
    def __init__(self, name, bases, namespace):
        print("called as a metaclass with", name, sorted(namespace))

    def __call__(self):
        return None


seed = Hook("seed", (), {})


class Shape(Union[seed]):
    width = 3


print("Shape is not a class:", Shape)
