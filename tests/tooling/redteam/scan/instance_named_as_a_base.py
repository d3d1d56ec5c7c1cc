"""A class base that is a plain name bound to an instance (not a call) still makes the instance's own class act as the metaclass: Python calls Hook(name, bases, namespace) with no metaclass= written."""


class Hook:
    def __init__(self, name, bases, namespace):
        print("called as a metaclass with", name, sorted(namespace))


seed = Hook("seed", (), {})


class Shape(seed):
    width = 3


print("Shape is not a class:", Shape)
