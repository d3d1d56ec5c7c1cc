import abc


class Own(**{"metaclass": abc.ABCMeta}):
    pass
