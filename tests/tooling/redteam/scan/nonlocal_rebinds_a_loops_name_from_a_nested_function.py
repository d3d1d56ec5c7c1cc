"""A nested function's nonlocal statement rebinds the enclosing function's loop variable, which the scan took for
the name's only binding (a loop over literal strings), so getattr(obj, key) read a name made at run time:
__globals__, then __import__ and sys."""


def grab(obj, name):
    def put():
        nonlocal key
        key = name
    for key in ("real",):
        put()
        return getattr(obj, key)


U = "_" * 2
GLOBALS = grab(grab, U + "globals" + U)
