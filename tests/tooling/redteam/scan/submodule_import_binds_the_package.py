import collections.abc


class Own:
    _sys = 1


sys_module = collections._sys
