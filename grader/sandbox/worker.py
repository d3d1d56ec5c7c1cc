"""The worker: the only process that imports and runs student code.

Started by the sandbox's boot (grader.sandbox.boot.become_worker, for a plain start and for batch's zygote) or,
with no sandbox, by grader.sandbox.spawn, through main(): it warms torch, installs the guard, says it is ready,
then imports the submission at the first request and answers requests on its socket (grader.sandbox.wire):
call a function or method, read an attribute, load parameters, or run a backward pass. Every call runs inside
grader.sandbox.guard.watch() and reports its stats. Whatever the student's code does here, the test process
only ever sees decoded plain data.
"""

import contextlib
import functools
import gc
import importlib.util
import os
import sys
import traceback
from collections.abc import Iterator
from multiprocessing.connection import Connection
from types import FunctionType, ModuleType
from typing import Any

import torch

from grader.lab import LAB
from grader.sandbox import guard, wire
from grader.sandbox.policy import set_rlimit

STUDENT_MODULE = LAB.module
CACHED_VERSION = "__dynamo_disable"  # where torch._disable_dynamo keeps the version it calls (compile_nothing)


class Worker:
    def __init__(self, conn: Connection, impl_file: str) -> None:
        self.conn = conn
        self.impl_file = impl_file
        self.module: ModuleType | None = None
        self.import_error: dict[str, Any] | None = None
        self.handles: dict[int, Any] = {}
        self.failed_stats: guard.CallStats | None = None

    # -- values crossing the wire -------------------------------------------------------------

    def export(self, value: Any) -> Any:
        return wire.walk(value, self._pack)

    def resolve(self, value: Any) -> Any:
        return wire.walk(value, self._unpack)

    def _pack(self, value: Any) -> Any:
        """A value as plain data, running none of the student's code: a tensor (of any subclass) is copied
        with torch's function and dispatch handling off, so no mode or __torch_dispatch__ of theirs runs;
        a subclass of int, float or str is read through the base type's own method."""
        kind = type(value)
        if issubclass(kind, torch.Tensor):
            with below_the_students_torch():
                plain = torch.Tensor.detach(value).as_subclass(torch.Tensor)
                return plain.clone(memory_format=torch.contiguous_format)
        if value is None or kind is bool:
            return value
        for base in (int, float, str):
            if issubclass(kind, base):
                return base.__dict__[f"__{base.__name__}__"](value)
        if issubclass(kind, torch.Size):
            return tuple(tuple.__iter__(value))
        if kind in (torch.dtype, torch.device):
            return str(value)
        handle_id = len(self.handles) + 1
        self.handles[handle_id] = value
        return wire.remote_ref(handle_id, type(value).__name__)

    def _unpack(self, value: Any) -> Any:
        return self.handles[value["__remote__"]] if wire.is_remote_ref(value) else value

    # -- requests -----------------------------------------------------------------------------

    def target(self, request: dict[str, Any]) -> Any:
        owner = self.module if request.get("handle") is None else self.handles[request["handle"]]
        name = request.get("name")
        return owner if name is None else getattr(owner, name)

    def op_hello(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.module is None and self.import_error is None:
            self.load()
        info: dict[str, Any] = {"import_error": self.import_error, "functions": [], "classes": [], "exceptions": {}}
        if self.module is None:
            return info
        for name, value in vars(self.module).items():
            if name.startswith("__"):
                continue
            if isinstance(value, type) and issubclass(value, BaseException):
                bases = [base.__name__ for base in value.__mro__ if base.__module__ == "builtins"]
                info["exceptions"][name] = bases
            elif isinstance(value, type):
                info["classes"].append(name)
            elif callable(value):
                info["functions"].append(name)
        return info

    @contextlib.contextmanager
    def watched(self) -> Iterator[guard.CallStats]:
        """guard.watch(), whose stats also travel with an error the call raises (a refused call)."""
        with guard.watch() as stats:
            try:
                yield stats
            except BaseException:
                self.failed_stats = stats
                raise

    def op_getattr(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"value": self.export(self.target(request))}

    def op_call(self, request: dict[str, Any]) -> dict[str, Any]:
        func = self.target(request)
        args = self.resolve(request.get("args", ()))
        kwargs = self.resolve(request.get("kwargs", {}))
        with self.watched() as stats:
            result = func(*args, **kwargs)
        args_after = [self.export(a) if isinstance(a, torch.Tensor) else None for a in args]
        return {"value": self.export(result), "stats": stats.as_dict(), "args_after": args_after}

    def op_grad(self, request: dict[str, Any]) -> dict[str, Any]:
        """Backward pass of sum(output_i * cotangent_i); returns d/d(args[i]) for requested i."""
        func = self.target(request)
        args = list(self.resolve(request["args"]))
        kwargs = self.resolve(request.get("kwargs", {}))
        wanted = request["wrt"]
        for index in wanted:
            args[index] = args[index].detach().clone().requires_grad_(True)
        with self.watched() as stats:
            result = func(*args, **kwargs)
            outputs = [result] if isinstance(result, torch.Tensor) else list(result)
            loss = sum(
                (output * cotangent).sum()
                for output, cotangent in zip(outputs, request["cotangents"], strict=False)
                if cotangent is not None
            )
            grads = torch.autograd.grad(loss, [args[i] for i in wanted], allow_unused=True)
        return {"value": self.export(list(grads)), "stats": stats.as_dict()}

    def op_load_params(self, request: dict[str, Any]) -> dict[str, Any]:
        module = self.target(request)
        with torch.no_grad():
            for name, tensor in request["params"].items():
                try:
                    parameter = module.get_parameter(name)
                except AttributeError:
                    own = ", ".join(dict(module.named_parameters())) or "none"
                    raise ValueError(f"{type(module).__name__} has no parameter {name} (it has {own}): the tests "
                                     "set the weight and bias of each of its nn.Linear layers, as the handout names "
                                     "them") from None
                if parameter.shape != tensor.shape:
                    raise ValueError(
                        f"parameter {name} has shape {tuple(parameter.shape)}, expected {tuple(tensor.shape)}"
                    )
                parameter.copy_(tensor)
        return {"value": None}

    # -- loop ---------------------------------------------------------------------------------

    def describe(self, error: BaseException) -> dict[str, Any]:
        frames = traceback.extract_tb(error.__traceback__)
        student = [frame for frame in frames if os.path.abspath(frame.filename) == self.impl_file]
        where = student[-1] if student else None
        return {
            "type": type(error).__name__,
            "bases": [base.__name__ for base in type(error).__mro__ if base.__module__ == "builtins"],
            "submission_classes": [
                name for name, value in self.exception_classes() if isinstance(error, value)
            ],
            "message": str(error)[:4000],
            "line": where.lineno if where else None,
            "code": (where.line or "") if where else "",
            "traceback": "".join(traceback.format_exception(error))[-4000:],
        }

    def exception_classes(self) -> list[tuple[str, type[BaseException]]]:
        if self.module is None:
            return []
        return [
            (name, value)
            for name, value in vars(self.module).items()
            if isinstance(value, type) and issubclass(value, BaseException)
        ]

    def serve(self) -> None:
        while True:
            try:
                with below_the_students_torch():
                    request = wire.decode(self.conn.recv_bytes())
            except EOFError:
                return
            self.failed_stats = None
            try:
                reply = {"ok": True, **OPERATIONS[request["op"]](self, request)}
            except BaseException as error:  # student code may raise anything, SystemExit included
                reply = {"ok": False, "error": self.describe(error)}
                if self.failed_stats is not None:
                    reply["stats"] = self.failed_stats.as_dict()
            try:
                with below_the_students_torch():
                    frame = wire.encode(reply)
            except Exception as error:
                with below_the_students_torch():
                    frame = wire.encode({"ok": False, "error": self.describe(error)})
            self.conn.send_bytes(frame)

    def load(self) -> None:
        spec = importlib.util.spec_from_file_location(STUDENT_MODULE, self.impl_file)
        if spec is None or spec.loader is None:
            raise ImportError(f"{self.impl_file} cannot be imported as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[STUDENT_MODULE] = module
        try:
            spec.loader.exec_module(module)
        except BaseException as error:
            self.import_error = self.describe(error)
            return
        self.module = module


@contextlib.contextmanager
def below_the_students_torch() -> Iterator[None]:
    """The worker's own tensor work outside a graded call (reading a request, copying and sending a result):
    torch's function and dispatch handling off, so that no mode or tensor subclass of the student's sees it."""
    with guard.NO_TORCH_FUNCTION(), guard.NO_TORCH_DISPATCH():
        yield


# The requests the worker answers, by the "op" of the message (grader.sandbox.proxy sends them).
OPERATIONS = {"hello": Worker.op_hello, "getattr": Worker.op_getattr, "call": Worker.op_call,
              "grad": Worker.op_grad, "load_params": Worker.op_load_params}


def limit_memory(budget_mb: int) -> None:
    """Cap the worker's address space so that a memory bomb fails here, not on the machine (Linux)."""
    import resource

    budget = budget_mb * 1024 * 1024
    with open("/proc/self/statm") as statm:
        current = int(statm.read().split()[0]) * resource.getpagesize()
    set_rlimit(resource.RLIMIT_AS, current + budget)


def compile_nothing() -> None:
    """Many of torch's Python functions (the meta device's kernels among them) are wrapped by
    torch._disable_dynamo, whose wrapper imports the compiler at their first call to make a version of them it
    will not compile: 1.5 CPU-seconds in every worker, and operator definitions, which the guard refuses inside
    a graded call. The worker compiles nothing (the scan refuses torch.compile), so each function is its own
    such version here, and functions wrapped later are left as they are. Should torch's wrapper change shape,
    this does nothing, and the first meta operation of warm_up() imports the compiler, outside any call."""
    import torch._compile

    wrap = torch._compile._disable_dynamo
    inner = next((const for const in wrap.__code__.co_consts if getattr(const, "co_name", None) == "inner"), None)
    if inner is None or "fn" not in inner.co_freevars or CACHED_VERSION not in inner.co_consts:
        return
    for function in gc.get_objects():
        if type(function) is FunctionType and function.__code__ is inner and function.__closure__:
            wrapped = function.__closure__[inner.co_freevars.index("fn")].cell_contents
            setattr(wrapped, CACHED_VERSION, wrapped)

    def leave_as_is(fn: Any = None, recursive: bool = True) -> Any:
        return fn if fn is not None else functools.partial(leave_as_is, recursive=recursive)

    torch._compile._disable_dynamo = torch._disable_dynamo = leave_as_is


def warm_up(meta: bool = True) -> None:
    """Pay torch's first-use costs before any call is timed. meta: also the first meta-device operation
    (sympy's import, about 0.5 CPU-seconds, while the test process collects): suites may call the student's
    code on that device (a tensor built on the CPU shows there)."""
    torch.set_num_threads(1)
    compile_nothing()
    with guard.watch():
        torch.ones(2) + 1
        if meta:
            torch.ones(2, device="meta") + 1


def main(argv: list[str] | None = None) -> None:
    """argv: [socket fd, path of the student's file, warm ("all" or "public"), address-space budget in MB]."""
    fd_text, impl_path, warm, budget_mb = (argv or sys.argv[1:5])[:4]
    fd, impl_file = int(fd_text), os.path.abspath(impl_path)
    sys.dont_write_bytecode = True
    conn = Connection(fd)
    warm_up(meta=warm in ("all", "public"))
    guard.install()
    if sys.platform.startswith("linux"):
        limit_memory(int(budget_mb))
    conn.send_bytes(wire.encode(wire.READY))
    Worker(conn, impl_file).serve()  # the student's file is imported by the first request


if __name__ == "__main__":
    main()
