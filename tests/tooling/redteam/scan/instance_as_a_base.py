"""A class statement whose base is an instance makes that instance's class the metaclass: Python calls Hook(name, bases, namespace) with no metaclass= written, and the class statement binds whatever Hook returns."""


class Hook:
    def __init__(self, name, bases, namespace):
        print("called as a metaclass with", name, sorted(namespace))
        self.namespace = namespace


class Shape(Hook("seed", (), {})):
    width = 3

    def area(self):
        return 9


print("Shape is not a class:", Shape, isinstance(Shape, Hook))
