"""Static analysis of one function's AST for AutoGraph: which names a statement binds in its scope, which
it reads, and which are live after each control-flow statement.

AutoGraph turns an ``if``/``while``/``for`` into nested functions that pass "state" (the variables the
statement changes) in and out; a variable is state only where it matters after the statement (or, for a
loop, in its next iteration), so that a variable local to one branch needs no value in the other one.
Liveness is computed on the AST after ``return``/``break``/``continue`` were lowered to flags
(``lowering.py``), so the control flow is structured and one backward pass (with a fixed point for
loops) gives exact results for the statements AutoGraph converts.
"""

import ast

# Nodes that open a scope of their own: names bound inside them are not bound in the enclosing scope.
SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp,
               ast.DictComp, ast.GeneratorExp)


def _same_scope_nodes(node):
    """``node`` and its descendants in the same scope; nested scope nodes are yielded, not entered."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, SCOPE_NODES):
            continue
        stack.extend(ast.iter_child_nodes(n))


def declared_outside(stmts):
    """Names the statements declare ``global`` or ``nonlocal`` (``{name: "global" | "nonlocal"}``)."""
    out = {}
    for top in stmts:
        for n in _same_scope_nodes(top):
            if isinstance(n, ast.Global):
                out.update((name, "global") for name in n.names)
            elif isinstance(n, ast.Nonlocal):
                out.update((name, "nonlocal") for name in n.names)
    return out


def bound_names(stmts):
    """The names the statements bind (assign, delete, import, define) in the scope they run in."""
    out = set()
    for top in stmts:
        for n in _same_scope_nodes(top):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(n.name)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                out.add(n.id)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                out.add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                for alias in n.names:
                    out.add(alias.asname or alias.name.split(".")[0])
    return out


def _dotted(node):
    """``a.b.c`` for an attribute chain on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or not parts:
        return None
    return ".".join([node.id] + parts[::-1])


def modified_attributes(stmts):
    """The attributes of names (``self.x``, ``a.b.c``) the statements assign: AutoGraph carries them
    through staged control flow as TensorFlow does (``if c: self.x = y``)."""
    out = set()
    for top in stmts:
        for n in _same_scope_nodes(top):
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
                dotted = _dotted(n)
                if dotted is not None:
                    out.add(dotted)
    return out


def _free_reads(scope):
    """Names a nested function, lambda, class or comprehension reads from the scopes around it."""
    loads, stores = set(), set()
    for n in ast.walk(scope):
        if isinstance(n, ast.Name):
            (loads if isinstance(n.ctx, ast.Load) else stores).add(n.id)
        elif isinstance(n, ast.arg):
            stores.add(n.arg)
        elif isinstance(n, ast.Nonlocal):
            loads.update(n.names)  # it reads and may rebind the enclosing variable
        elif n is not scope and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stores.add(n.name)
    return loads - stores


def reads(node):
    """The names an expression or a simple statement reads in its scope (nested scopes' free reads too)."""
    out = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, SCOPE_NODES):
            out |= _free_reads(n)
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            out.add(n.target.id)
        stack.extend(ast.iter_child_nodes(n))
    return out


def _target_reads(target):
    """What assigning to ``target`` reads: ``a[i] = v`` reads ``a`` and ``i``; ``x = v`` reads nothing."""
    if isinstance(target, ast.Name):
        return set()
    if isinstance(target, (ast.Tuple, ast.List)):
        out = set()
        for e in target.elts:
            out |= _target_reads(e)
        return out
    if isinstance(target, ast.Starred):
        return _target_reads(target.value)
    return reads(target)


# ---- liveness ------------------------------------------------------------------------------------------
# Each statement gets ``_ag_live_out`` (names read later before being rebound); a loop also gets
# ``_ag_live_head`` (names live where each iteration starts: its test, the body's reads before its writes,
# and what is live after the loop).

def annotate_liveness(stmts, live_out):
    live = set(live_out)
    for s in reversed(stmts):
        s._ag_live_out = frozenset(live)
        live = _transfer(s, live)
    return live


def _extra_test_reads(s):
    extra = getattr(s, "_ag_extra_test", None)
    return reads(extra) if extra is not None else set()


def _transfer(s, out):
    if isinstance(s, ast.If):
        return reads(s.test) | annotate_liveness(s.body, out) | annotate_liveness(s.orelse, out)
    if isinstance(s, ast.While):
        after = annotate_liveness(s.orelse, out) | reads(s.test)
        head = set(after)
        while True:
            new = after | annotate_liveness(s.body, head)
            if new == head:
                break
            head = new
        s._ag_live_head = frozenset(head)
        return head
    if isinstance(s, (ast.For, ast.AsyncFor)):
        after = annotate_liveness(s.orelse, out) | _extra_test_reads(s)
        targets = bound_names([ast.Assign(targets=[s.target], value=ast.Constant(None))])
        head = set(after)
        while True:
            new = after | (annotate_liveness(s.body, head) - targets) | _target_reads(s.target)
            if new == head:
                break
            head = new
        s._ag_live_head = frozenset(head)
        return reads(s.iter) | head
    if isinstance(s, (ast.Try, getattr(ast, "TryStar", ast.Try))):
        after_final = annotate_liveness(s.finalbody, out)
        handlers = set()
        for h in s.handlers:
            h_in = annotate_liveness(h.body, after_final)
            if h.name:
                h_in.discard(h.name)
            handlers |= h_in | (reads(h.type) if h.type is not None else set())
        # An exception may leave the body anywhere: what the handlers read is live throughout it.
        body_out = annotate_liveness(s.orelse, after_final) | handlers
        return annotate_liveness(s.body, body_out) | handlers | after_final
    if isinstance(s, (ast.With, ast.AsyncWith)):
        body_in = annotate_liveness(s.body, out)
        for item in s.items:
            if item.optional_vars is not None:
                body_in -= bound_names([ast.Assign(targets=[item.optional_vars], value=ast.Constant(None))])
                body_in |= _target_reads(item.optional_vars)
        return body_in | set().union(*(reads(item.context_expr) for item in s.items))
    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return (out - {s.name}) | reads(s)
    if isinstance(s, (ast.Return, ast.Raise)):
        return reads(s)
    if isinstance(s, (ast.Break, ast.Continue)):
        return set(out)  # lowered before this analysis runs; kept conservative
    if isinstance(s, getattr(ast, "Match", ())):
        return set(out) | reads(s)
    return (out - bound_names([s])) | reads(s)
