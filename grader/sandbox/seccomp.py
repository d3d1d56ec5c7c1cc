"""The worker's system-call filter: the kernel facilities numerical code never needs, refused by the kernel.

Policy as data: DENIED names the calls, NUMBERS gives each one's number per architecture, and `program`
turns both into a classic BPF filter that the worker installs on itself (`install`) after it has its uid
and no_new_privs, before torch or the student's file runs. A denied call fails with EPERM. A call made through
another ABI than the native one (32-bit calls on x86_64) kills the worker, since the table cannot name it.
The worker starts threads (torch's) but no process: clone is allowed only with CLONE_THREAD and without a
namespace flag, fork and vfork are refused, and clone3, whose flags the filter cannot read, answers ENOSYS,
which makes the C library fall back to clone.

This is a deny-list of kernel facilities, a layer under the view, uid and limits: it narrows what code that
escaped the in-process guard could ask of the kernel, nothing more.
"""

import ctypes
import errno
import platform
import struct

#: the calls the worker may not make (grouped by what they reach)
DENIED = (
    # other processes' memory and state
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    # file systems and namespaces: the view stays as it was built
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_tree", "move_mount", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "open_by_handle_at", "name_to_handle_at", "quotactl", "swapon", "swapoff",
    # the kernel itself
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl",
    "add_key", "request_key", "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "reboot", "acct", "syslog", "lookup_dcookie", "fanotify_init", "vhangup", "personality",
    # the machine's clock and names
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
)

#: per architecture (platform.machine()): the audit arch the kernel reports, and the call numbers
ARCHES = {
    "x86_64": 0xC000003E,
    "aarch64": 0xC00000B7,
}
NUMBERS = {
    "x86_64": {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "pidfd_getfd": 438,
        "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272, "setns": 308,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
        "mount_setattr": 442, "open_by_handle_at": 304, "name_to_handle_at": 303, "quotactl": 179, "swapon": 167,
        "swapoff": 168, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "keyctl": 250, "add_key": 248, "request_key": 249,
        "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176,
        "reboot": 169, "acct": 163, "syslog": 103, "lookup_dcookie": 212, "fanotify_init": 300, "vhangup": 153,
        "personality": 135, "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159,
        "sethostname": 170, "setdomainname": 171, "clone": 56, "clone3": 435, "fork": 57, "vfork": 58,
    },
    "aarch64": {
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "pidfd_getfd": 438,
        "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "unshare": 97, "setns": 268,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
        "mount_setattr": 442, "open_by_handle_at": 265, "name_to_handle_at": 264, "quotactl": 60, "swapon": 224,
        "swapoff": 225, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "keyctl": 219, "add_key": 217, "request_key": 218,
        "kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106,
        "reboot": 142, "acct": 89, "syslog": 116, "lookup_dcookie": 18, "fanotify_init": 262, "vhangup": 58,
        "personality": 92, "settimeofday": 170, "clock_settime": 112, "clock_adjtime": 266, "adjtimex": 171,
        "sethostname": 161, "setdomainname": 162, "clone": 220, "clone3": 435,
    },
}
PROCESSES = ("fork", "vfork")  # where the architecture has them (aarch64 forks through clone only)
CLONE_THREAD = 0x00010000
#: clone flags that make a new namespace
NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
X32_BIT = 0x40000000  # x86_64: calls of the x32 ABI carry this bit in their number

# classic BPF, as <linux/filter.h> and <linux/seccomp.h> define it
LD_W_ABS, JEQ_K, JSET_K, JGE_K, RET_K = 0x20, 0x15, 0x45, 0x35, 0x06
RET_ALLOW, RET_KILL_PROCESS, RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
NR_OFFSET, ARCH_OFFSET, ARG0_OFFSET = 0, 4, 16  # in struct seccomp_data (little-endian: arg 0's low word)
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str, denied: tuple[str, ...] = DENIED) -> bytes:
    """The filter for machine (a platform.machine() name in ARCHES): its instructions, 8 bytes each."""
    numbers = NUMBERS[machine]
    deny = _op(RET_K, RET_ERRNO | errno.EPERM)
    ops = [_op(LD_W_ABS, ARCH_OFFSET), _op(JEQ_K, ARCHES[machine], jt=1), _op(RET_K, RET_KILL_PROCESS),
           _op(LD_W_ABS, NR_OFFSET)]
    if machine == "x86_64":
        ops += [_op(JGE_K, X32_BIT, jf=1), deny]
    for name in (*denied, *(name for name in PROCESSES if name in numbers)):
        ops += [_op(JEQ_K, numbers[name], jf=1), deny]
    ops += [_op(JEQ_K, numbers["clone3"], jf=1), _op(RET_K, RET_ERRNO | errno.ENOSYS)]
    # clone: allowed for a thread (CLONE_THREAD) in no new namespace, refused otherwise
    ops += [_op(JEQ_K, numbers["clone"], jf=4), _op(LD_W_ABS, ARG0_OFFSET), _op(JSET_K, NAMESPACE_FLAGS, jt=1),
            _op(JSET_K, CLONE_THREAD, jt=1), deny]
    ops.append(_op(RET_K, RET_ALLOW))
    return b"".join(ops)


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(machine: str | None = None) -> bool:
    """Install the filter on this process and the threads and processes it starts later; False where the
    architecture has no table (nothing is installed there). Needs no_new_privs set first, or root."""
    machine = machine or platform.machine()
    if machine not in ARCHES:
        return False
    code = program(machine)
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = _Program(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(fprog), 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"seccomp filter: {errno.errorcode.get(error, error)}")
    return True
