"""A module-level name read before the module's own later binding of it is still the builtin (the scan counts any module binding as the file's own), so exec and open are reached."""
exec("import sys; print('exec reached sys.modules:', len(sys.modules))")
print("open reached:", open("/etc/hostname").read().strip())
exec = open = None
