import warnings


class Own:
    _module = None


module = warnings.catch_warnings()._module
