"""type(int)(int) is type(int) again: a one-argument call of type hands back a class."""
Built = type(int)(int)("Built", (), {})
