# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""A Python function as a job's training script.

:func:`function_script` writes a script that defines a function, what the
function uses by global name, and calls it; ``TrainingClient.train`` carries
that script to the job's pods in ``spec.trainer.script``, so that a function
written in a notebook trains without an image build.

What is shipped is what ``inspect`` can see:

- the function's own source (``inspect.getsource``, dedented), without its
  decorators: the function itself is what runs;
- for each name it reads as a global (found in its compiled source, nested
  functions, default values and annotations included), looked up in the
  function's module (``func.__globals__``):

  - a module: ``import torch`` or ``import numpy as np``;
  - a constant (``int``, ``float``, ``str``, ``bool``, ``None``, and tuples,
    lists and dicts of those): ``NAME = <its value now>``;
  - a function, class or other object of an installed library (the standard
    library, site-packages or dist-packages) that its module has by name:
    ``from torch.nn import Linear``;
  - a function or class of your own (a notebook cell, a script, a module of
    yours next to the notebook): its source, with its decorators, and in turn
    what it uses;

- for a function nested in another, the enclosing function's variables it
  uses, when they are constants (as above).

Anything else cannot be shipped and raises :class:`ShippingError`, naming
it and why: a lambda, a builtin or other function without Python source, a
bound method, a closure over a variable that is not a constant, a global
holding an object (a model, a tensor, a lock: make it inside the function,
or pass what makes it in ``func_args``), or a function whose source Python
cannot find (one typed in ``python -c`` or the plain interactive prompt, or
made by ``exec``; a notebook cell or a ``.py`` file works).

The script runs in the job's image: the modules it imports must be there,
and a module of your own that the function uses as a module (``import
mytools`` ... ``mytools.f()``) is imported, not shipped. Import what you use
from it by name (``from mytools import f``), and f's source is shipped.
Globals are read when the script is written: a constant changed later, or a
global the function uses but that does not exist yet, is not seen (the
latter fails in the pod, as it would here).

A search's trials (``TrainingClient.tune``) ship the function's script with
the search's parameters as *tuned* arguments: the script reads them from its
command line, ``--lr=0.01``, converts them to the parameters' types and
passes them to the function by name, with ``func_args``. Every string of a
trial template may hold placeholders, the script's source included: text
such as ``${name}`` in the function's source is refused by the server unless
it is ``${param.<a parameter>}`` or ``${trial.name}``, which are replaced.
"""

from __future__ import annotations

import __future__
import ast
import dis
import functools
import inspect
import json
import linecache
import math
import os
import site
import sys
import sysconfig
import textwrap
import types
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from .errors import ShippingError

#: The name of the script a job gets (``spec.trainer.script.name``).
SCRIPT_NAME = "train.py"

#: The largest script the API takes (``spec.trainer.script.source``).
MAX_SCRIPT_BYTES = 256 * 1024

# The instructions that read or write a global (LOAD_NAME: a class body or
# the module-level code of a definition, which fall back to the globals;
# LOAD_FROM_DICT_OR_GLOBALS: Python 3.12's annotation scopes).
_GLOBAL_OPS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_FROM_DICT_OR_GLOBALS"})

_SCALARS = (int, float, str, bool, type(None))

_MISSING = object()


def function_script(func: Callable[..., Any], func_args: Optional[Mapping[str, Any]] = None, *,
                    tuned: Optional[Mapping[str, Any]] = None) -> str:
    """The text of a script that defines ``func`` and what it uses, and calls
    ``func(**func_args)`` when run (the module docstring says what is shipped
    and what cannot be). ``func_args`` travel as JSON: tuples arrive as
    lists, dict keys as strings.

    ``tuned`` names keyword arguments the script reads from its command line
    instead, as ``--NAME=VALUE`` (:func:`tuned_argument`): a search's trials
    pass their parameters' values so (``TrainingClient.tune``). Each maps to
    how its value is read: ``"float"``, ``"int"``, or a dict from the
    argument's text to the value to pass (a categorical parameter's values,
    which travel as JSON). The script ends with an error, before calling
    ``func``, when one of them is not on its command line; a tuned name may
    not be in ``func_args`` too.

    Raises :class:`ShippingError` for a function, a global or an argument
    that cannot be shipped, and for a script over 256 KiB.
    """
    func = _checked_function(func)
    args = _checked_args(func, func_args, tuned)
    return _Shipper(func).script(args, _checked_tuned(tuned))


def tuned_argument(name: str, value: str) -> str:
    """The command-line argument that gives a script of
    :func:`function_script` the value of a tuned keyword argument:
    ``--NAME=VALUE``."""
    return f"--{name}={value}"


# The call of a function with tuned arguments: func_args, and each tuned
# argument read from its --NAME=VALUE on the command line.
_TUNED_MAIN = '''if __name__ == "__main__":
    import json as _tensorstack_json
    import sys as _tensorstack_sys

    _tensorstack_kwargs = _tensorstack_json.loads({args})
    # The tuned arguments come as --NAME=VALUE: "float", "int", or the
    # values a categorical parameter's arguments stand for.
    _tensorstack_tuned = _tensorstack_json.loads({tuned})
    for _tensorstack_arg in _tensorstack_sys.argv[1:]:
        _tensorstack_name, _tensorstack_eq, _tensorstack_text = _tensorstack_arg[2:].partition("=")
        if not (_tensorstack_arg.startswith("--") and _tensorstack_eq and _tensorstack_name in _tensorstack_tuned):
            continue
        _tensorstack_how = _tensorstack_tuned[_tensorstack_name]
        if isinstance(_tensorstack_how, dict):
            _tensorstack_kwargs[_tensorstack_name] = _tensorstack_how.get(_tensorstack_text, _tensorstack_text)
        elif _tensorstack_how == "int" and _tensorstack_text.lstrip("+-").isdigit():
            _tensorstack_kwargs[_tensorstack_name] = int(_tensorstack_text)
        elif _tensorstack_how == "int":
            _tensorstack_kwargs[_tensorstack_name] = int(float(_tensorstack_text))
        else:
            _tensorstack_kwargs[_tensorstack_name] = float(_tensorstack_text)
    _tensorstack_missing = sorted(set(_tensorstack_tuned) - set(_tensorstack_kwargs))
    if _tensorstack_missing:
        _tensorstack_sys.exit("{script}: no --NAME=VALUE argument for " + ", ".join(_tensorstack_missing)
                              + ": the runtime must pass the trainer's args (spec.trainer.args) to the script")
    {func}(**_tensorstack_kwargs)'''


def _describe(value: Any) -> str:
    """How messages name a value: its kind and where it comes from."""
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    if inspect.isclass(value):
        return f"class {value.__module__}.{value.__qualname__}"
    if inspect.isfunction(value) or inspect.isbuiltin(value):
        module = getattr(value, "__module__", None)
        return f"function {module + '.' if module else ''}{getattr(value, '__qualname__', value.__name__)}"
    kind = type(value)
    return f"a {kind.__module__ + '.' if kind.__module__ != 'builtins' else ''}{kind.__qualname__} object"


def _checked_function(func: Any) -> types.FunctionType:
    """func itself, once it is a function whose source can be shipped and
    whose call runs it; its decorators are taken off."""
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)
    if inspect.ismethod(func):
        raise ShippingError(name, "it is a bound method: its object cannot be shipped; pass a plain function")
    if inspect.isroutine(func) and not inspect.isfunction(func):
        raise ShippingError(name, "it is a built-in or C function: it has no Python source to ship")
    if not inspect.isfunction(func):
        hint = " (for functools.partial, pass the arguments in func_args)" if callable(func) else ""
        raise ShippingError(name, f"it is {_describe(func)}, not a function defined with def{hint}")
    try:
        func = inspect.unwrap(func)
    except ValueError:
        pass
    name = func.__qualname__
    if func.__name__ == "<lambda>":
        raise ShippingError(name, "it is a lambda: its source cannot be told apart from the line around it; "
                                  "define it with def")
    if inspect.isgeneratorfunction(func) or inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func):
        raise ShippingError(name, "it is a generator or async function: calling it would not run its body")
    return func


def _checked_tuned(tuned: Optional[Mapping[str, Any]]) -> Optional[str]:
    """tuned as JSON, once each name says how its value is read; None
    without any."""
    if not tuned:
        return None
    out: Dict[str, Any] = {}
    for name, how in tuned.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ShippingError(f"tuned[{name!r}]", "a tuned argument's name must be a Python identifier")
        if isinstance(how, Mapping):
            try:
                out[name] = json.loads(json.dumps({str(k): v for k, v in how.items()}))
            except (TypeError, ValueError) as err:
                raise ShippingError(f"tuned[{name!r}]", f"its values are not JSON ({err})") from None
        elif how in ("float", "int"):
            out[name] = how
        else:
            raise ShippingError(f"tuned[{name!r}]", f"must be 'float', 'int' or a dict of values, not {how!r}")
    return json.dumps(out, sort_keys=True)


def _checked_args(func: types.FunctionType, func_args: Optional[Mapping[str, Any]],
                  tuned: Optional[Mapping[str, Any]] = None) -> str:
    """func_args as JSON, once func takes them, and the tuned arguments."""
    args = dict(func_args or {})
    for name in tuned or {}:
        if name in args:
            raise ShippingError(f"func_args[{name!r}]", "it is a tuned argument too: the trial's value is passed")
    for key, value in args.items():
        if not isinstance(key, str):
            raise ShippingError(f"func_args[{key!r}]", "argument names must be strings")
        try:
            json.dumps(value)
        except (TypeError, ValueError) as err:
            raise ShippingError(f"func_args[{key!r}]", f"{_describe(value)} is not JSON ({err}): the arguments "
                                                        "travel to the pods as JSON (numbers, strings, booleans, "
                                                        "None, lists and dicts of those)") from None
    try:
        inspect.signature(func).bind(**args, **{name: None for name in tuned or {}})
    except TypeError as err:
        what = "func_args and the tuned arguments" if tuned else "func_args"
        raise ShippingError(func.__qualname__, f"{what} do not fit its parameters: {err}") from None
    return json.dumps(args, sort_keys=True)


def _literal(value: Any, seen: Optional[set] = None) -> Optional[str]:
    """Python text that makes value again, when it is a constant (exact
    types only: a subclass's repr may not make it); None otherwise."""
    kind = type(value)
    if kind is float:
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else '-float("inf")'
        return repr(value)
    if kind in _SCALARS:
        try:
            return repr(value)
        except ValueError:  # an int past sys.get_int_max_str_digits()
            return None
    if kind not in (tuple, list, dict):
        return None
    seen = set() if seen is None else seen
    if id(value) in seen:
        return None  # it holds itself
    seen.add(id(value))
    try:
        if kind is dict:
            items = []
            for k, v in value.items():
                key, val = _literal(k, seen), _literal(v, seen)
                if key is None or val is None:
                    return None
                items.append(f"{key}: {val}")
            return "{" + ", ".join(items) + "}"
        parts = [_literal(v, seen) for v in value]
        if any(p is None for p in parts):
            return None
        if kind is tuple:
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        return "[" + ", ".join(parts) + "]"  # type: ignore[arg-type]
    finally:
        seen.discard(id(value))


@functools.lru_cache(maxsize=None)
def _library_dirs() -> Tuple[str, ...]:
    """The directories of installed code: the standard library's and the
    site-packages'."""
    dirs = set()
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            dirs.add(paths[key])
    try:
        dirs.update(site.getsitepackages())
    except AttributeError:  # an old virtualenv's site module
        pass
    try:
        dirs.add(site.getusersitepackages())
    except AttributeError:
        pass
    return tuple(os.path.join(os.path.realpath(d), "") for d in dirs if d)


def _is_library(module_name: Any) -> bool:
    """Whether the module is installed code the image may have too (the
    standard library, site-packages), rather than the user's own (a
    notebook, a script, a module next to them), whose source is shipped."""
    if not isinstance(module_name, str) or module_name == "__main__":
        return False
    module = sys.modules.get(module_name)
    if module is None:
        return False
    spec = getattr(module, "__spec__", None)
    if spec is not None and spec.origin in ("built-in", "frozen"):
        return True
    path = getattr(module, "__file__", None)
    if not path:
        return False
    path = os.path.realpath(path)
    parts = path.split(os.sep)
    return "site-packages" in parts or "dist-packages" in parts or path.startswith(_library_dirs())


def _library_import(name: str, value: Any) -> Optional[Tuple[str, str]]:
    """(module, attribute) when value is what an installed module has under
    that attribute, for ``from module import attribute``; None otherwise."""
    module = getattr(value, "__module__", None)
    candidates = [(module, getattr(value, "__qualname__", None)), (module, getattr(value, "__name__", None)),
                  (module, name)]
    owner = getattr(value, "__self__", None)
    if isinstance(owner, types.ModuleType):  # a C module's function
        candidates.append((owner.__name__, getattr(value, "__name__", None)))
    candidates.append((type(value).__module__, name))
    for mod, attr in candidates:
        if not (isinstance(mod, str) and isinstance(attr, str) and attr.isidentifier() and _is_library(mod)):
            continue
        if getattr(sys.modules[mod], attr, _MISSING) is value:
            return mod, attr
    return None


def _global_names(code: types.CodeType) -> List[str]:
    """The globals the code and the code nested in it read or write, in
    the order they come. A class body's own names (LOAD_NAME of a name the
    same body assigns) are its, not globals."""
    out: List[str] = []

    def walk(c: types.CodeType) -> None:
        instructions = list(dis.get_instructions(c))
        own = {ins.argval for ins in instructions if ins.opname == "STORE_NAME"}
        for ins in instructions:
            if ins.opname not in _GLOBAL_OPS or not isinstance(ins.argval, str) or ins.argval in out:
                continue
            if ins.opname == "LOAD_NAME" and ins.argval in own:
                continue
            out.append(ins.argval)
        for const in c.co_consts:
            if isinstance(const, types.CodeType):
                walk(const)

    walk(code)
    return out


def _closure(func: types.FunctionType) -> Dict[str, Any]:
    """The enclosing functions' variables func uses, by name (_MISSING for
    one not assigned yet)."""
    out: Dict[str, Any] = {}
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or ()):
        try:
            out[name] = cell.cell_contents
        except ValueError:
            out[name] = _MISSING
    return out


def _definition(source: str, what: str, keep_decorators: bool) -> Tuple[str, str]:
    """The one definition at the top of source: its text and the name it
    defines."""
    source = textwrap.dedent(source)
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise ShippingError(what, f"the source Python finds for it does not parse on its own ({err.msg}, "
                                  f"line {err.lineno})") from None
    if not tree.body or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        raise ShippingError(what, "the source Python finds for it is not its def or class statement")
    node = tree.body[0]
    start = node.lineno
    if keep_decorators and node.decorator_list:
        start = min(d.lineno for d in node.decorator_list)
    lines = source.splitlines()
    text = "\n".join(lines[start - 1:node.end_lineno]).rstrip() + "\n"
    return text, node.name


def _own_method(cls: type) -> Optional[Tuple[types.FunctionType, str]]:
    """A method written in the class's own source, and that source: the
    method's code says which file and line the class is at, which also works
    for a class of a notebook cell. (A method a decorator such as dataclass
    made has no such source, and may see other globals.)"""
    for method in _methods(cls):
        try:
            method = inspect.unwrap(method)
        except ValueError:
            continue
        if not method.__qualname__.startswith(cls.__qualname__ + "."):
            continue
        code = method.__code__
        lines = linecache.getlines(code.co_filename)
        if not lines:
            continue
        try:
            tree = ast.parse("".join(lines))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.ClassDef) and node.name == cls.__name__ and
                    node.lineno <= code.co_firstlineno <= (node.end_lineno or 0)):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                return method, "".join(lines[start - 1:node.end_lineno])
    return None


def _class_source(cls: type) -> str:
    """A class's source: where one of its own methods says it is (which
    also works in a notebook, where inspect.getsource looks for classes in
    the module's file, which a notebook's __main__ has not), else what
    inspect.getsource finds, else the notebook's cells."""
    own = _own_method(cls)
    if own is not None:
        return own[1]
    try:
        source = inspect.getsource(cls)
        # Python 3.13 finds a class by its first line in the module's file,
        # which may be another file than the class's: check it is the class.
        tree = ast.parse(textwrap.dedent(source))
        if tree.body and isinstance(tree.body[0], ast.ClassDef) and tree.body[0].name == cls.__name__:
            return source
    except (OSError, TypeError, SyntaxError):
        pass
    if cls.__module__ == "__main__":
        source = _cell_class_source(cls)
        if source is not None:
            return source
    raise OSError("source code not available")


def _cell_class_source(cls: type) -> Optional[str]:
    """The source of a class of a notebook cell without a method of its own
    to find it by (a dataclass): the newest source Python keeps (the cells
    IPython ran, newest last) that defines a class of that name at its top
    level, at the class's first line when Python says which
    (__firstlineno__, Python 3.13)."""
    first_line = getattr(cls, "__firstlineno__", None)
    for filename, entry in reversed(list(linecache.cache.items())):
        # A cell is kept under a name that is no file on disk.
        if len(entry) != 4 or not entry[2] or os.path.exists(filename):
            continue
        lines = entry[2]
        try:
            tree = ast.parse("".join(lines))
        except (SyntaxError, ValueError):
            continue
        for node in reversed(tree.body):
            if not isinstance(node, ast.ClassDef) or node.name != cls.__name__:
                continue
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if first_line is None or first_line in (start, node.lineno):
                return "".join(lines[start - 1:node.end_lineno])
    return None


class _Shipper:
    """Collects what a function needs, as script text: imports, constants,
    and the definitions, each after what it needs to be defined."""

    def __init__(self, func: types.FunctionType):
        self.func = func
        # What each name of the script is bound to, to ship it once and to
        # refuse one name for two things: {name: (key, description)}.
        self.bound: Dict[str, Tuple[Tuple[Any, ...], str]] = {}
        self.keep: List[Any] = []  # what the keys' ids are of, alive until the script is written
        self.imports: List[str] = []
        self.constants: List[str] = []
        self.definitions: List[str] = []
        # The script compiles every definition the way the function was
        # compiled: with or without postponed annotations.
        self.flags = func.__code__.co_flags & __future__.annotations.compiler_flag

    def script(self, args_json: str, tuned_json: Optional[str] = None) -> str:
        name = self.define(self.func, None, [], strip_decorators=True)
        origin = getattr(self.func, "__module__", None) or "?"
        head = [
            f"# {SCRIPT_NAME}: written by tensorstack.training from the function {self.func.__qualname__}",
            f"# (module {origin}): the function, what it uses by global name, and its call with the",
            "# job's arguments, which every replica runs.",
        ]
        if self.flags:
            head.append("from __future__ import annotations")
        parts = ["\n".join(head)]
        if self.imports:
            # import lines, then from lines, each sorted, as isort would.
            parts.append("\n".join(sorted(self.imports, key=lambda line: (line.startswith("from "), line))))
        if self.constants:
            parts.append("\n".join(self.constants))
        parts.extend(d.rstrip("\n") for d in self.definitions)
        # The guard keeps the call out of any import of the script (by
        # multiprocessing's spawn, a DataLoader's workers). An exception
        # ends the script with its traceback and exit status 1, which fails
        # the replica.
        if tuned_json is None:
            parts.append(
                'if __name__ == "__main__":\n'
                "    import json as _tensorstack_json\n\n"
                f"    {name}(**_tensorstack_json.loads({args_json!r}))"
            )
        else:
            parts.append(_TUNED_MAIN.format(args=repr(args_json), tuned=repr(tuned_json), func=name,
                                            script=SCRIPT_NAME))
        text = "\n\n\n".join(parts) + "\n"
        try:
            compile(text, SCRIPT_NAME, "exec", dont_inherit=True)
        except SyntaxError as err:
            raise ShippingError(self.func.__qualname__, f"the script written for it does not compile ({err.msg}, "
                                                        f"line {err.lineno})") from None
        size = len(text.encode("utf-8"))
        if size > MAX_SCRIPT_BYTES:
            raise ShippingError(self.func.__qualname__, f"its script is {size} bytes, over the {MAX_SCRIPT_BYTES} "
                                                        "(256 KiB) a job carries: large constants belong in a file "
                                                        "or volume the function reads")
        return text

    # ---- names

    def bind(self, name: str, key: Tuple[Any, ...], what: str, chain: List[str]) -> bool:
        """Bind a name of the script; False when it already is, to the same
        thing."""
        if name in self.bound:
            old_key, old_what = self.bound[name]
            if old_key == key:
                return False
            raise ShippingError(_where(chain, name), f"the script would need the name for two things: {old_what} "
                                                     f"and {what}; rename one of them")
        self.bound[name] = (key, what)
        return True

    def resolve(self, name: str, scope: Mapping[str, Any], closure: Mapping[str, Any], chain: List[str]) -> None:
        """Ship what a global name of a definition is bound to, as seen from
        the definition: its enclosing functions' variables, then its module's
        globals. A name in neither is a builtin, or not defined yet: the pod
        finds it, or not, as here."""
        if name in closure:
            value = closure[name]
            if value is _MISSING:
                raise ShippingError(_where(chain, name), "the enclosing function's variable is not assigned yet")
            text = _literal(value)
            if text is None:
                raise ShippingError(_where(chain, name), f"{chain[-1]} is a closure over it, and it is "
                                                         f"{_describe(value)}: only constants (numbers, strings, "
                                                         "booleans, None, tuples, lists and dicts of those) of an "
                                                         "enclosing function can be shipped; define the function "
                                                         "at the top level of its module or cell")
            if self.bind(name, ("constant", text), f"the constant {text[:40]}", chain):
                self.constants.append(f"{name} = {text}")
            return
        value = scope.get(name, _MISSING)
        if value is not _MISSING:
            self.ship(name, value, scope, chain)

    def ship(self, name: str, value: Any, scope: Mapping[str, Any], chain: List[str]) -> None:
        """Make name, a global of scope, hold value in the script."""
        if isinstance(value, types.ModuleType):
            module = value.__name__
            if module == "__main__":
                raise ShippingError(_where(chain, name), "it is the running program's own module, which the pods "
                                                         "do not have; use its functions by name")
            if self.bind(name, ("module", module), f"module {module}", chain):
                self.imports.append(f"import {module}" if module == name else f"import {module} as {name}")
            return
        text = _literal(value)
        if text is not None:
            if self.bind(name, ("constant", text), f"the constant {text[:40]}", chain):
                self.constants.append(f"{name} = {text}")
            return
        imported = _library_import(name, value)
        if imported is not None:
            module, attr = imported
            if self.bind(name, ("import", module, attr), f"{module}.{attr}", chain):
                self.imports.append(f"from {module} import {attr}" + (f" as {name}" if attr != name else ""))
            return
        target = value
        if callable(value) and not inspect.isclass(value):
            try:
                target = inspect.unwrap(value)
            except ValueError:
                pass
        if inspect.isfunction(target) or inspect.isclass(target):
            if getattr(target, "__name__", "") == "<lambda>":
                raise ShippingError(_where(chain, name), "it is a lambda: its source cannot be told apart from "
                                                         "the line around it; define it with def")
            self.define(target, name, chain, strip_decorators=False, found_in=scope)
            return
        if inspect.isroutine(value):
            why = "it is a built-in or C function that cannot be imported by name from its module"
        else:
            why = (f"it is {_describe(value)}: only modules, functions, classes and constants (numbers, strings, "
                   "booleans, None, tuples, lists and dicts of those) can be shipped; make it inside the function, "
                   "or pass what makes it in func_args")
        raise ShippingError(_where(chain, name), why)

    # ---- definitions

    def define(self, obj: Any, name: Optional[str], chain: List[str], strip_decorators: bool,
               found_in: Optional[Mapping[str, Any]] = None) -> str:
        """Ship a function's or class's source, after what it needs; bind
        name to it too when the source defines another name. found_in is
        the globals name was found in. Returns the name the source
        defines."""
        what = _where(chain, name or obj.__qualname__)
        is_class = inspect.isclass(obj)
        if not is_class:
            if obj.__name__ == "<lambda>":
                raise ShippingError(what, "it is a lambda: define it with def")
            if "__class__" in obj.__code__.co_freevars:
                raise ShippingError(what, "it uses super() or __class__, as a method does: a method cannot be "
                                          "shipped without its class; ship a plain function")
        try:
            source = _class_source(obj) if is_class else inspect.getsource(obj)
        except (OSError, TypeError) as err:
            raise ShippingError(what, f"Python cannot find its source ({err}): what is typed at the interactive "
                                      "prompt or in python -c, or made by exec, has none; define it in a notebook "
                                      "cell or a .py file") from None
        text, defined = _definition(source, what, keep_decorators=not strip_decorators)
        key = ("definition", id(obj))
        self.keep.append(obj)
        new = self.bind(defined, key, f"{'class' if is_class else 'function'} {obj.__module__}.{obj.__qualname__}",
                        chain)
        alias = name is not None and name != defined
        if alias:
            alias_new = self.bind(name, ("alias", defined, id(obj)), f"another name of {defined}", chain)
        if new:
            if is_class:
                scope, closure = _class_globals(obj, found_in or {}), _class_closure(obj)
            else:
                scope, closure = obj.__globals__, _closure(obj)
            try:
                code = compile(text, f"<{defined}>", "exec", flags=self.flags, dont_inherit=True)
            except SyntaxError as err:
                raise ShippingError(what, f"its source does not compile on its own ({err.msg})") from None
            for ref in _global_names(code):
                # A dunder (__name__, which a class body reads) is the
                # script's own.
                if ref != defined and not (ref.startswith("__") and ref.endswith("__")):
                    self.resolve(ref, scope, closure, chain + [defined])
            self.definitions.append(text)
        if alias and alias_new:
            self.definitions.append(f"{name} = {defined}\n")
        return defined


def _methods(cls: type) -> List[types.FunctionType]:
    """The functions a class defines: its methods, static and class methods
    and properties' getters and setters."""
    out = []
    for value in vars(cls).values():
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            out.extend(f for f in (value.fget, value.fset, value.fdel) if inspect.isfunction(f))
        elif inspect.isfunction(value):
            out.append(value)
    return out


def _class_closure(cls: type) -> Dict[str, Any]:
    """The enclosing functions' variables a class's methods use (a class
    defined in a function); super()'s __class__ is the class's own."""
    out: Dict[str, Any] = {}
    for method in _methods(cls):
        out.update((k, v) for k, v in _closure(method).items() if k != "__class__")
    return out


def _class_globals(cls: type, found_in: Mapping[str, Any]) -> Mapping[str, Any]:
    """The globals a class's body and methods see: a method's own (one
    written in a file or cell, not one a decorator such as dataclass made,
    which may have other globals), else its module's when the module has
    the class, else those it was found in."""
    own = _own_method(cls)
    if own is not None:
        return own[0].__globals__
    module = sys.modules.get(cls.__module__)
    if module is not None and getattr(module, cls.__name__, None) is cls:
        return vars(module)
    return found_in


def _where(chain: List[str], name: str) -> str:
    """Names what cannot be shipped by the path to it: 'train -> helper -> model'."""
    return " -> ".join(chain + [name])
