"""The AutoGraph source-to-source rewrite of one function's AST.

Passes, in order (each in TensorFlow AutoGraph's spirit, written for ember):
1. ``lowering``: ``return``/``break``/``continue`` inside control flow become flags.
2. ``_Expressions``: ``and``/``or``/``not``, ``a if c else b``, ``assert`` and calls become ``ag__``
   operator calls (lazy operands as lambdas), so a tensor operand stages ``cond``/``Assert`` and a called
   user function is converted too (``converted_call``).
3. ``analysis.annotate_liveness``: what is live after each ``if`` and at each loop's head.
4. ``_ControlFlow``: each ``if``/``while``/``for`` becomes nested functions (``if_body``, ``loop_body``,
   ``get_state``/``set_state`` over the statement's state variables) and one ``ag__.if_stmt`` /
   ``while_stmt`` / ``for_stmt`` call, which decides at run time whether to stage or run as Python.

Every node written keeps the line of the statement it comes from, and the code is compiled under the
user's file name, so tracebacks and the source locations that graph nodes record name the user's lines.
"""

import ast

from ember.autograph import analysis, lowering

AG = "ag__"
# Calls left alone: they need the caller's frame (locals, super) or are ours.
_FRAME_CALLS = frozenset(["locals", "globals", "vars", "eval", "exec", "dir", "super", "print"])
_DIRECTIVE = "set_loop_options"


class Names:
    """Fresh names that collide with none of the function's own."""

    def __init__(self, tree):
        self.used = set()
        for n in ast.walk(tree):
            if isinstance(n, ast.Name):
                self.used.add(n.id)
            elif isinstance(n, ast.arg):
                self.used.add(n.arg)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.used.add(n.name)
        self.counts = {}

    def fresh(self, base):
        n = self.counts.get(base, 0)
        while True:
            name = base if n == 0 else f"{base}_{n}"
            n += 1
            if name not in self.used:
                self.counts[base] = n
                self.used.add(name)
                return name


def _ag(attr):
    return ast.Attribute(value=ast.Name(AG, ast.Load()), attr=attr, ctx=ast.Load())


def _ag_call(attr, *args):
    return ast.Call(func=_ag(attr), args=list(args), keywords=[])


def _lambda(body):
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                         kwarg=None, defaults=[]), body=body)


def _is_ag_call(call):
    f = call.func
    return isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == AG


def _is_directive(stmt):
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    f = stmt.value.func
    return (isinstance(f, ast.Attribute) and f.attr == _DIRECTIVE) or (isinstance(f, ast.Name) and f.id == _DIRECTIVE)


_locate = lowering.locate


class _Expressions(ast.NodeTransformer):
    """Rewrites the expressions of one function (and the lambdas and comprehensions in it)."""

    def __init__(self, first_param, has_class_cell):
        self.first_param = first_param
        self.has_class_cell = has_class_cell

    def visit_FunctionDef(self, node):
        return node  # a nested function is converted on its own

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if any(isinstance(n, ast.NamedExpr) for v in node.values for n in ast.walk(v)):
            return node  # a lambda would scope the walrus's name to itself
        op = "and_" if isinstance(node.op, ast.And) else "or_"
        result = node.values[-1]
        for value in reversed(node.values[:-1]):
            result = _ag_call(op, _lambda(value), _lambda(result))
        return _locate(result, node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return _locate(_ag_call("not_", node.operand), node)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if any(isinstance(n, ast.NamedExpr) for n in ast.walk(node)):
            return node
        call = _ag_call("if_exp", node.test, _lambda(node.body), _lambda(node.orelse),
                        ast.Constant(ast.unparse(node.test)))
        return _locate(call, node)

    def visit_Call(self, node):
        self.generic_visit(node)
        if _is_ag_call(node):
            return node
        if isinstance(node.func, ast.Name) and node.func.id in _FRAME_CALLS:
            if node.func.id == "super" and not node.args and self.has_class_cell and self.first_param:
                # Zero-argument super() finds its class through the compiler's __class__ cell, which only
                # a function defined in a class body gets: name both explicitly.
                node.args = [ast.Name("__class__", ast.Load()), ast.Name(self.first_param, ast.Load())]
            return node
        if isinstance(node.func, (ast.Attribute, ast.Name)) and getattr(node.func, "attr", getattr(
                node.func, "id", None)) == _DIRECTIVE:
            return node
        args = ast.Tuple(elts=node.args, ctx=ast.Load())
        if node.keywords:
            kwargs = ast.Dict(keys=[ast.Constant(k.arg) if k.arg is not None else None for k in node.keywords],
                              values=[k.value for k in node.keywords])
        else:
            kwargs = ast.Constant(None)
        call = _ag_call("converted_call", node.func, args, kwargs)
        return _locate(call, node)

    def visit_Assert(self, node):
        self.generic_visit(node)
        msg = _lambda(node.msg) if node.msg is not None else ast.Constant(None)
        return _locate(ast.Expr(value=_ag_call("assert_stmt", node.test, msg)), node)

    def convert(self, fdef):
        body = []
        for s in fdef.body:
            new = self.visit(s)
            body.extend(new if isinstance(new, list) else [new])
        fdef.body = body
        for attr_node in ast.walk(fdef):  # the extra tests lowering put on for loops
            extra = getattr(attr_node, "_ag_extra_test", None)
            if extra is not None:
                attr_node._ag_extra_test = self.visit(extra)


class _Scope:
    """One Python function scope of the output: names maybe bound in it so far, and the user's
    global/nonlocal declarations (those names are never state: assignments reach them directly)."""

    def __init__(self, bound, declared):
        self.bound = set(bound)
        self.declared = declared


def _params(args):
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return names


def _no_args():
    return ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                         defaults=[])


def _dotted_expr(dotted):
    return ast.parse(dotted, mode="eval").body


def _attributes(stmts, modified):
    """The attributes the statements assign whose object the statements do not rebind."""
    return sorted(a for a in analysis.modified_attributes(stmts) if a.split(".", 1)[0] not in modified)


def _tuple(names, ctx):
    return ast.Tuple(elts=[ast.Name(n, ctx()) for n in names], ctx=ctx())


class _ControlFlow:
    def __init__(self, names):
        self.names = names

    # ---- scopes and blocks
    def function(self, fdef):
        declared = analysis.declared_outside(fdef.body)
        scope = _Scope(_params(fdef.args), declared)
        fdef.body = self.block(fdef.body, scope) or [ast.copy_location(ast.Pass(), fdef)]
        return fdef

    def block(self, stmts, scope):
        out = []
        for s in stmts:
            new = self.statement(s, scope)
            out.extend(new)
            scope.bound |= analysis.bound_names(new)
        return out

    def statement(self, s, scope):
        if isinstance(s, ast.If):
            return self.if_(s, scope)
        if isinstance(s, ast.While):
            return self.while_(s, scope)
        if isinstance(s, ast.For):
            return self.for_(s, scope)
        if isinstance(s, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            return [s]  # nested functions were converted on their own
        for field in ("body", "orelse", "finalbody"):
            block = getattr(s, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(s, field, self.block(block, scope))
        for h in getattr(s, "handlers", ()):
            h.body = self.block(h.body, scope)
        return [s]

    # ---- helpers that write the nested functions
    def _declarations(self, names, scope, ref):
        """``nonlocal`` for the state the nested function writes; the user's own ``global``/``nonlocal``
        declarations repeated for the declared names it writes."""
        out = []
        state = sorted(n for n in names if n not in scope.declared)
        if state:
            out.append(ast.Nonlocal(names=state))
        for kind, node_type in (("global", ast.Global), ("nonlocal", ast.Nonlocal)):
            declared = sorted(n for n in names if scope.declared.get(n) == kind)
            if declared:
                out.append(node_type(names=declared))
        return [_locate(n, ref) for n in out]

    def _def(self, name, params, body, ref):
        fn = ast.FunctionDef(name=name, args=params, body=body or [ast.Pass()], decorator_list=[], returns=None,
                             type_comment=None)
        if hasattr(ast.FunctionDef, "type_params") or "type_params" in ast.FunctionDef._fields:
            fn.type_params = []
        return _locate(fn, ref)

    def _state_fns(self, state, scope, ref, attrs=()):
        """get_state/set_state over the variables ``state`` and then the attributes ``attrs`` ("self.x":
        read as Undefined where it does not exist, set unless Undefined)."""
        get_name, set_name = self.names.fresh("get_state"), self.names.fresh("set_state")
        values = [ast.Name(n, ast.Load()) for n in state]
        values += [_ag_call("ldu", _lambda(_dotted_expr(a)), ast.Constant(a)) for a in attrs]
        get_fn = self._def(get_name, _no_args(), [ast.Return(value=ast.Tuple(elts=values, ctx=ast.Load()))], ref)
        if not hasattr(self, "_vars_name"):
            self._vars_name = self.names.fresh("vars_")
        vars_ = self._vars_name
        params = _no_args()
        params.args = [ast.arg(arg=vars_)]
        set_body = []
        if state:
            source = ast.Name(vars_, ast.Load())
            if attrs:
                source = ast.Subscript(value=source, slice=ast.Slice(upper=ast.Constant(len(state))), ctx=ast.Load())
            set_body = self._declarations(state, scope, ref) + [
                ast.Assign(targets=[_tuple(state, ast.Store)], value=source)]
        for k, a in enumerate(attrs):
            base, attr = a.rsplit(".", 1)
            value = ast.Subscript(value=ast.Name(vars_, ast.Load()), slice=ast.Constant(len(state) + k),
                                  ctx=ast.Load())
            set_body.append(ast.Expr(value=_ag_call("store_attr", _dotted_expr(base), ast.Constant(attr), value)))
        set_fn = self._def(set_name, params, set_body or [ast.Pass()], ref)
        return get_fn, set_fn, get_name, set_name

    def _undefined(self, names, scope, ref):
        out = []
        for n in names:
            if n not in scope.bound and n not in scope.declared:
                out.append(_locate(ast.Assign(targets=[ast.Name(n, ast.Store())],
                                              value=_ag_call("Undefined", ast.Constant(n))), ref))
        return out

    def _inner_block(self, stmts, written, scope, ref, params=()):
        """The body of a nested function that writes ``written`` of the enclosing scope."""
        inner = _Scope(set(written) | set(params), scope.declared)
        body = self.block(stmts, inner)
        return self._declarations(written, scope, ref) + (body or [ast.Pass()])

    def _symbols(self, state):
        return ast.Tuple(elts=[ast.Constant(n) for n in state], ctx=ast.Load())

    # ---- the statements
    def if_(self, s, scope):
        modified = analysis.bound_names(s.body + s.orelse)
        # State: what is live after the if, and what a branch reads that the other branch's trace (a staged
        # cond traces both) would otherwise have overwritten in the enclosing scope.
        branch_reads = set().union(*(analysis.reads(b) for b in s.body + s.orelse))
        state = sorted(n for n in modified & (s._ag_live_out | (scope.bound & branch_reads))
                       if n not in scope.declared)
        written = sorted(set(state) | (modified & scope.bound) | {n for n in modified if n in scope.declared})
        attrs = _attributes(s.body + s.orelse, modified)
        get_fn, set_fn, get_name, set_name = self._state_fns(state, scope, s, attrs)
        body_name, else_name = self.names.fresh("if_body"), self.names.fresh("else_body")
        body_fn = self._def(body_name, _no_args(), self._inner_block(s.body, written, scope, s), s)
        else_fn = self._def(else_name, _no_args(), self._inner_block(s.orelse, written, scope, s), s)
        call = ast.Expr(value=_ag_call("if_stmt", s.test, ast.Name(body_name, ast.Load()),
                                       ast.Name(else_name, ast.Load()), ast.Name(get_name, ast.Load()),
                                       ast.Name(set_name, ast.Load()), self._symbols(state + attrs),
                                       ast.Constant(len(state) + len(attrs))))
        return [get_fn, set_fn, body_fn, else_fn] + self._undefined(state, scope, s) + [_locate(call, s)]

    def _loop_parts(self, s, scope, extra_modified=()):
        body = s.body
        directives = [b for b in body if _is_directive(b)]
        body = [b for b in body if not _is_directive(b)]
        modified = analysis.bound_names(body) | set(extra_modified)
        state = sorted(n for n in modified & s._ag_live_head if n not in scope.declared)
        written = sorted(set(state) | (modified & scope.bound) | {n for n in modified if n in scope.declared})
        opts = ast.Dict(keys=[], values=[])
        for d in directives:
            for kw in d.value.keywords:
                opts.keys.append(ast.Constant(kw.arg))
                opts.values.append(kw.value)
        appended = sorted(_appended_lists(body) & scope.bound - modified)
        if appended:  # a staged loop must not grow a Python list: the operator checks these
            opts.keys.append(ast.Constant("lists"))
            opts.values.append(_lambda(ast.Tuple(elts=[ast.Tuple(elts=[ast.Constant(n), ast.Name(n, ast.Load())],
                                                                  ctx=ast.Load()) for n in appended],
                                                 ctx=ast.Load())))
        return body, state, written, opts, _attributes(body, modified)

    def while_(self, s, scope):
        body, state, written, opts, attrs = self._loop_parts(s, scope)
        get_fn, set_fn, get_name, set_name = self._state_fns(state, scope, s, attrs)
        body_name, test_name = self.names.fresh("loop_body"), self.names.fresh("loop_test")
        body_fn = self._def(body_name, _no_args(), self._inner_block(body, written, scope, s), s)
        test_fn = self._def(test_name, _no_args(), [ast.Return(value=s.test)], s)
        call = ast.Expr(value=_ag_call("while_stmt", ast.Name(test_name, ast.Load()), ast.Name(body_name, ast.Load()),
                                       ast.Name(get_name, ast.Load()), ast.Name(set_name, ast.Load()),
                                       self._symbols(state + attrs), opts))
        out = [get_fn, set_fn, body_fn, test_fn] + self._undefined(state, scope, s) + [_locate(call, s)]
        scope.bound |= analysis.bound_names(out)
        return out + self.block(s.orelse, scope)

    def for_(self, s, scope):
        target_assign = ast.copy_location(ast.Assign(targets=[s.target], value=None), s)
        targets = analysis.bound_names([target_assign])
        body, state, written, opts, attrs = self._loop_parts(s, scope, targets)
        get_fn, set_fn, get_name, set_name = self._state_fns(state, scope, s, attrs)
        body_name, itr = self.names.fresh("loop_body"), self.names.fresh("itr")
        target_assign.value = ast.Name(itr, ast.Load())
        _locate(target_assign, s)
        params = _no_args()
        params.args = [ast.arg(arg=itr)]
        body_fn = self._def(body_name, params, self._inner_block([target_assign] + body, written, scope, s, [itr]), s)
        out = [get_fn, set_fn, body_fn]
        extra = getattr(s, "_ag_extra_test", None)
        if extra is not None:
            extra_name = self.names.fresh("extra_test")
            out.append(self._def(extra_name, _no_args(), [ast.Return(value=extra)], s))
            extra_arg = ast.Name(extra_name, ast.Load())
        else:
            extra_arg = ast.Constant(None)
        opts.keys.append(ast.Constant("iterate_names"))
        opts.values.append(ast.Constant(ast.unparse(s.target)))
        call = ast.Expr(value=_ag_call("for_stmt", s.iter, extra_arg, ast.Name(body_name, ast.Load()),
                                       ast.Name(get_name, ast.Load()), ast.Name(set_name, ast.Load()),
                                       self._symbols(state + attrs), opts))
        out += self._undefined(state, scope, s) + [_locate(call, s)]
        scope.bound |= analysis.bound_names(out)
        return out + self.block(s.orelse, scope)


_LIST_METHODS = frozenset(["append", "extend", "insert"])


def _appended_lists(stmts):
    """Names whose ``append``/``extend``/``insert`` the statements call (``l.append(x)``)."""
    out = set()
    for top in stmts:
        for n in analysis._same_scope_nodes(top):
            if not isinstance(n, ast.Call):
                continue
            f = n.func
            if _is_ag_call(n) and f.attr == "converted_call" and n.args:
                f = n.args[0]
            if isinstance(f, ast.Attribute) and f.attr in _LIST_METHODS and isinstance(f.value, ast.Name):
                out.add(f.value.id)
    return out


def _undefined_loads(fdef):
    """Wraps reads of the names that may hold ``ag__.Undefined`` in ``ag__.ld`` (it raises TensorFlow's
    "used before assignment" error instead of passing the placeholder on)."""
    maybe = set()
    for n in ast.walk(fdef):
        if (isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and _is_ag_call(n.value)
                and n.value.func.attr == "Undefined"):
            maybe.add(n.targets[0].id)
    if not maybe:
        return

    class _Loads(ast.NodeTransformer):
        def visit_FunctionDef(self, node):
            if node.name.startswith("get_state"):
                return node  # passing Undefined in and out of control flow is how state works
            self.generic_visit(node)
            return node

        def visit_Name(self, node):
            if isinstance(node.ctx, ast.Load) and node.id in maybe:
                return _locate(_ag_call("ld", node), node)
            return node

    _Loads().visit(fdef)


def convert_function(fdef, has_class_cell=False):
    """Converts a parsed ``def`` (and the functions nested in it) in place; returns it."""
    names = Names(fdef)
    _convert(fdef, names, has_class_cell)
    _undefined_loads(fdef)
    ast.fix_missing_locations(fdef)
    return fdef


def _convert(fdef, names, has_class_cell):
    for n in list(ast.walk(fdef)):  # nested functions first, each as its own scope
        if n is not fdef and isinstance(n, ast.FunctionDef) and _direct_child_scope(fdef, n):
            _convert(n, names, has_class_cell)
    lowering.lower_returns(fdef, names)
    lowering.LoopJumps(names).lower(fdef)
    params = _params(fdef.args)
    _Expressions(params[0] if params else None, has_class_cell).convert(fdef)
    analysis.annotate_liveness(fdef.body, set())
    _ControlFlow(names).function(fdef)


def _direct_child_scope(parent, node):
    """Whether ``node`` is a def whose nearest enclosing def is ``parent`` (classes' methods excluded:
    a class body nested in a converted function is left as it is)."""
    stack = list(ast.iter_child_nodes(parent))
    while stack:
        n = stack.pop()
        if n is node:
            return True
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return False
