"""getattr(x, '__class__') twice reaches type, bound to a name and called later."""
maker = getattr(getattr(0, "__class__"), "__class__")
Built = maker("Built", (), {})
