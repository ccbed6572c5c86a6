"""Lowers ``return``, ``break`` and ``continue`` inside converted control flow to boolean flags.

A staged ``if`` or loop is a function call: a jump cannot leave it. So, as TensorFlow's AutoGraph does,
``return x`` becomes ``do_return = True; retval_ = x``, ``break`` becomes ``break_ = True``, ``continue``
becomes ``continue_ = True``, the statements after a jump run under ``if not <flag>:``, and a loop's test
also checks the flag. Where one branch of an ``if`` always jumps, the statements after the ``if`` move
into the other branch instead of being guarded: ``if c: return a`` followed by ``return b`` stages as
one ``cond`` whose branches both return (no "return in one branch only" error, the seed's example).
"""

import ast

from ember.autograph import analysis


def locate(new, ref):
    """Gives ``new`` and its descendants that have no location the location of ``ref``."""
    for n in ast.walk(new):
        if "lineno" in n._attributes and getattr(n, "lineno", None) is None:
            # One point, the statement's first line: a generated call spanning the user's statement would
            # be reported (Python 3.11 places a method call at its attribute's end) at the statement's end.
            n.lineno, n.col_offset = ref.lineno, ref.col_offset
            n.end_lineno, n.end_col_offset = ref.lineno, ref.col_offset
    return new


def _flag_set(name, value, ref):
    return locate(ast.Assign(targets=[ast.Name(name, ast.Store())], value=ast.Constant(value)), ref)


def _not_flag(name):
    return ast.UnaryOp(op=ast.Not(), operand=ast.Name(name, ast.Load()))


def _contains(node, kinds, into_loops):
    """Whether ``node`` holds a statement of ``kinds`` that belongs to it (not to a nested scope, nor,
    unless ``into_loops``, to a nested loop)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            return True
        if isinstance(n, analysis.SCOPE_NODES):
            continue
        if not into_loops and isinstance(n, (ast.While, ast.For, ast.AsyncFor)):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return False


def _always_jumps(block, kinds):
    if not block:
        return False
    last = block[-1]
    if isinstance(last, kinds) or isinstance(last, ast.Raise):
        return True
    if isinstance(last, ast.If):
        return _always_jumps(last.body, kinds) and _always_jumps(last.orelse, kinds)
    return False


class _JumpLowering:
    """Rewrites the jumps of ``kinds`` in a block: ``jump_to(stmt)`` gives the statements a jump becomes."""

    def __init__(self, kinds, flag, jump_to, into_loops, on_loop=None):
        self.kinds = kinds
        self.flag = flag
        self.jump_to = jump_to
        self.into_loops = into_loops
        self.on_loop = on_loop  # called on each loop that holds a jump (a return inside a loop)

    def contains(self, node):
        return _contains(node, self.kinds, self.into_loops)

    def block(self, stmts):
        out = []
        for i, s in enumerate(stmts):
            if isinstance(s, self.kinds):
                out.extend(self.jump_to(s))
                return out  # what follows a jump never runs
            if not self.contains(s):
                out.append(s)
                continue
            rest = stmts[i + 1:]
            if isinstance(s, ast.If):
                if rest and _always_jumps(s.body, self.kinds) and not _always_jumps(s.orelse, self.kinds):
                    s.orelse, rest = s.orelse + rest, []
                elif rest and _always_jumps(s.orelse, self.kinds) and not _always_jumps(s.body, self.kinds):
                    s.body, rest = s.body + rest, []
                s.body = self.block(s.body) or [ast.copy_location(ast.Pass(), s)]
                s.orelse = self.block(s.orelse)
                out.append(s)
            elif isinstance(s, (ast.While, ast.For, ast.AsyncFor)):
                s.body = self.block(s.body) or [ast.copy_location(ast.Pass(), s)]
                out.extend(self.on_loop(s) if self.on_loop is not None else [s])
            else:  # try / with: jumps inside run the same way; the flag guards what follows
                for field in ("body", "orelse", "finalbody"):
                    if getattr(s, field, None):
                        setattr(s, field, self.block(getattr(s, field)) or [ast.copy_location(ast.Pass(), s)])
                for h in getattr(s, "handlers", ()):
                    h.body = self.block(h.body) or [ast.copy_location(ast.Pass(), h)]
                out.append(s)
            if rest:
                guarded = self.block(rest)
                if guarded:
                    out.append(locate(ast.If(test=_not_flag(self.flag), body=guarded, orelse=[]), rest[0]))
            return out
        return out


def _add_loop_test(loop, flag):
    """The loop also stops once ``flag`` is set: a while's test checks it first, a for gets an extra test."""
    if isinstance(loop, ast.While):
        loop.test = locate(ast.BoolOp(op=ast.And(), values=[_not_flag(flag), loop.test]), loop.test)
    else:
        extra = getattr(loop, "_ag_extra_test", None)
        test = _not_flag(flag) if extra is None else ast.BoolOp(op=ast.And(), values=[extra, _not_flag(flag)])
        loop._ag_extra_test = locate(test, loop)


def _guard_orelse(loop, flag):
    """A loop's ``else`` runs when the loop ended without a jump: after the loop, under ``not flag``."""
    if not loop.orelse:
        return [loop]
    orelse, loop.orelse = loop.orelse, []
    return [loop, locate(ast.If(test=_not_flag(flag), body=orelse, orelse=[]), orelse[0])]


def lower_returns(fdef, names):
    """Lowers the function's returns when one sits inside an if/while/for; ``names`` makes fresh names.
    Returns the name of the return-value variable (None when nothing was lowered)."""
    if not _return_in_control(fdef.body, False):
        return None
    do_return, retval = names.fresh("do_return"), names.fresh("retval_")

    def jump_to(ret):
        value = ret.value if ret.value is not None else ast.Constant(None)
        return [_flag_set(do_return, True, ret),
                locate(ast.Assign(targets=[ast.Name(retval, ast.Store())], value=value), ret)]

    def on_loop(loop):
        _add_loop_test(loop, do_return)
        return _guard_orelse(loop, do_return)

    lowering = _JumpLowering(ast.Return, do_return, jump_to, into_loops=True, on_loop=on_loop)
    first = fdef.body[0]
    body = lowering.block(fdef.body)
    prologue = [_flag_set(do_return, False, first),
                locate(ast.Assign(targets=[ast.Name(retval, ast.Store())],
                                  value=_ag_call("UndefinedReturnValue", [])), first)]
    last = fdef.body[-1]
    epilogue = locate(
        ast.Return(value=_ag_call("ret", [ast.Name(retval, ast.Load()), ast.Name(do_return, ast.Load())])), last)
    fdef.body = prologue + body + [epilogue]
    return retval


def _return_in_control(stmts, inside):
    """Whether a return sits inside an if/while/for (a return elsewhere stays a Python return)."""
    for s in stmts:
        if isinstance(s, ast.Return) and inside:
            return True
        if isinstance(s, analysis.SCOPE_NODES):
            continue
        nested = inside or isinstance(s, (ast.If, ast.While, ast.For, ast.AsyncFor))
        blocks = [getattr(s, f, None) or [] for f in ("body", "orelse", "finalbody")]
        blocks += [h.body for h in getattr(s, "handlers", ())]
        blocks += [c.body for c in getattr(s, "cases", ())]
        if any(_return_in_control(b, nested) for b in blocks if isinstance(b, list)):
            return True
    return False


def _ag_call(attr, args):
    return ast.Call(func=ast.Attribute(value=ast.Name("ag__", ast.Load()), attr=attr, ctx=ast.Load()),
                    args=args, keywords=[])


class LoopJumps(ast.NodeTransformer):
    """Lowers ``break`` and ``continue`` in every loop of one function (nested functions are separate)."""

    def __init__(self, names):
        self.names = names

    def visit_FunctionDef(self, node):
        return node  # converted on its own

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def _loop(self, loop):
        self.generic_visit(loop)  # inner loops first: their jumps are theirs
        out = [loop]
        if any(_contains(s, ast.Continue, False) for s in loop.body):
            flag = self.names.fresh("continue_")
            lowering = _JumpLowering(ast.Continue, flag, lambda s: [_flag_set(flag, True, s)], into_loops=False)
            loop.body = [_flag_set(flag, False, loop.body[0])] + lowering.block(loop.body)
        if any(_contains(s, ast.Break, False) for s in loop.body):
            flag = self.names.fresh("break_")
            lowering = _JumpLowering(ast.Break, flag, lambda s: [_flag_set(flag, True, s)], into_loops=False)
            loop.body = lowering.block(loop.body) or [ast.copy_location(ast.Pass(), loop)]
            _add_loop_test(loop, flag)
            out = [_flag_set(flag, False, loop)] + _guard_orelse(loop, flag)
        return out

    visit_While = visit_For = _loop

    def lower(self, fdef):
        body = []
        for s in fdef.body:
            new = self.visit(s)
            body.extend(new if isinstance(new, list) else [new])
        fdef.body = body
