"""str.format taken as a value (map(str.format, ...)) is never a call of .format, so its template need not be a literal: a template built at run time reads any attribute chain (here a function's __globals__ and the builtins in it) and hands back its text."""
u = "_" * 2


def probe():
    return None


template = "{0." + u + "globals" + u + "[" + u + "builtins" + u + "]}"
text = list(map(str.format, [template], [probe]))[0]
print("read through a run-time template:", text[:160])
