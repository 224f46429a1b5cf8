"""A reader of the PTX of one kernel, for the sm100 readiness tests: the kernel's instruction lines,
the immediates registers are set to, the expect-tx and barrier-init counts, the TMA destinations, and
its control flow (successors, a path from a line to the exit that avoids an instruction, the guard a
line runs under)."""

from __future__ import annotations

import bisect
import re
from collections import Counter


def kernel_lines(ptx: str) -> list[str]:
    """Instruction lines of the one .entry function, inline-asm blocks ({ ... } on lines of their own,
    the mbarrier spin loops) folded into a single line so that their local labels do not collide."""
    body = ptx[ptx.index(".entry") :]
    body = body[body.index("{", body.index(")")) + 1 :]
    out, depth, block = [], 0, []
    for raw in body.splitlines():
        line = raw.strip()
        if not line or line.startswith("//"):
            continue
        if line == "{":
            depth += 1
            block.append(line)
            continue
        if depth:
            block.append(line)
            if line == "}":
                depth -= 1
                if not depth:
                    out.append(" ".join(block))
                    block = []
            continue
        out.append(line)
    return out


def reg_value(lines: list[str], reg: str) -> int:
    """The immediate a register is set to with mov.b32 (exactly one definition)."""
    defs = [ln for ln in lines if re.match(rf"mov\.(b|u|s)32\s+{re.escape(reg)},", ln)]
    assert len(defs) == 1, (reg, defs)
    return int(re.search(r",\s*(-?\d+);", defs[0]).group(1))


def operand_value(lines: list[str], op: str) -> int:
    return int(op) if re.fullmatch(r"-?\d+", op) else reg_value(lines, op)


def expect_tx_counts(lines):
    hits = [re.search(r"mbarrier\.arrive\.expect_tx\.shared\.b64\s+%\w+, \[[^\]]+\], (\S+);", ln) for ln in lines]
    return [operand_value(lines, h.group(1)) for h in hits if h]


def barrier_init_counts(lines):
    hits = [re.search(r"mbarrier\.init\.shared\.b64\s+\[[^\]]+\], (\S+);", ln) for ln in lines]
    return [operand_value(lines, h.group(1)) for h in hits if h]


def tma_smem_offsets(lines):
    """Immediate offsets of the TMA load destinations [%r+OFF] from the dynamic shared-memory base."""
    offs = []
    for ln in lines:
        if ln.startswith("cp.async.bulk.tensor") and ".global" in ln:
            m = re.search(r"\.tile\S*\s+\[%\w+(?:\+(\d+))?\]", ln)
            offs.append(int(m.group(1) or 0))
    return offs


def successors(lines, labels, i, known):
    """Next instruction indices after line i, with predicate registers of known value resolved."""
    ln = lines[i]
    if re.match(r"(ret|exit|trap);", ln):
        return []
    m = re.match(r"(@(!?)(%p\d+)\s+)?bra(\.uni)?\s+(\$?\w+);", ln)
    if not m:
        return [i + 1]
    target = labels[m.group(5)]
    if not m.group(1):
        return [target]
    value = known.get(m.group(3))
    if value is not None:
        taken = value != bool(m.group(2))
        return [target] if taken else [i + 1]
    return [target, i + 1]


def escapes_without(lines, start: int, needle: str, known: dict) -> list[int]:
    """A path (line indices) from `start` to ret/exit that never executes a line containing
    `needle`, or [] when every path passes one."""
    labels = {ln[:-1]: i for i, ln in enumerate(lines) if re.fullmatch(r"\$?\w+:", ln)}
    stack, seen = [(start, [start])], {start}
    while stack:
        i, path = stack.pop()
        if needle in lines[i]:
            continue
        if re.match(r"(ret|exit|trap);", lines[i]):
            return path
        for j in successors(lines, labels, i, known):
            if j < len(lines) and j not in seen:
                seen.add(j)
                stack.append((j, path + [j]))
    return []


def guard_of(lines, i: int) -> dict:
    """{pred: value} that must hold for line i to execute: the nearest `@%p bra L` before it that
    jumps over it (the predicate defined once, so its value is the same later in the kernel)."""
    labels = {ln[:-1]: k for k, ln in enumerate(lines) if re.fullmatch(r"\$?\w+:", ln)}
    for k in range(i - 1, -1, -1):
        m = re.match(r"@(!?)(%p\d+)\s+bra(\.uni)?\s+(\$?\w+);", lines[k])
        if m and labels[m.group(4)] > i:
            defs = [ln for ln in lines if re.match(rf"\S+\s+{re.escape(m.group(2))}\b", ln)
                    or re.search(rf"\|{re.escape(m.group(2))},", ln)]
            if len(defs) == 1:
                return {m.group(2): bool(m.group(1))}  # `@%p bra` skips it: %p is false here
            return {}
    return {}


_OPS = {
    "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b, "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b, "shl": lambda a, b: a << b, "shr": lambda a, b: a >> b,
}


_DEST = re.compile(r"\S+\s+([^\s|,]+)[|,]")


def definitions(lines: list[str]) -> dict[str, list[int]]:
    """{register: the indices of the lines that write it, in order}: a line's first operand, written
    `op,` or `op|` (setp's pair of predicates). One pass, so that a chain of lookups is not one pass of
    the kernel per register."""
    out: dict[str, list[int]] = {}
    for i, ln in enumerate(lines):
        m = _DEST.match(ln)
        if m:
            out.setdefault(m.group(1), []).append(i)
    return out


def eval_reg(lines: list[str], op: str, env: dict, at: int | None = None, depth: int = 0,
             defs: dict[str, list[int]] | None = None) -> int:
    """The value of a register (or immediate) read by line `at`, computed from special registers (`env`,
    e.g. {"%cluster_ctarank": 1}) through mov / cvt / shfl.sync.idx (a warp-uniform value) / and / or /
    xor / add / sub / shl / shr / setp. The definition used is the last one before `at` (registers the
    compiler reuses, such as a loop's phase, are read where they were last set); KeyError when the chain
    leaves what it knows. `defs`: definitions(lines), where the caller has it."""
    if re.fullmatch(r"-?\d+", op):
        return int(op)
    if op in env:
        return env[op]
    assert depth < 40, op
    at = len(lines) if at is None else at
    defs = definitions(lines) if defs is None else defs
    before = defs.get(op, [])[: bisect.bisect_left(defs.get(op, []), at)]
    if not before:
        raise KeyError(f"{op}: no definition before line {at}")
    i = before[-1]
    ins, args = lines[i].split(None, 1)
    ops = [a.strip() for a in args.rstrip(";").split(",")]
    base = ins.split(".")[0]

    def operand(k: int) -> int:
        return eval_reg(lines, ops[k], env, i, depth + 1, defs)

    if base in ("mov", "cvt") or ins.startswith("shfl.sync.idx"):
        return operand(1)
    if base in _OPS:
        return _OPS[base](operand(1), operand(2))
    if base == "setp":
        a, b = operand(1), operand(2)
        return int({"ne": a != b, "eq": a == b, "lt": a < b, "ge": a >= b}[ins.split(".")[1]])
    raise KeyError(f"{op}: cannot evaluate {lines[i]}")


def known_predicates(lines: list[str], env: dict) -> dict:
    """{predicate: value} of every predicate `eval_reg` can compute from `env` (e.g. the CTA's rank)."""
    setps = [(i, m.group(1)) for i, ln in enumerate(lines) if (m := re.match(r"setp\.\S+\s+(%p\d+),", ln))]
    written = Counter(p for _, p in setps)
    defs = definitions(lines)
    known = {}
    for i, pred in setps:
        if written[pred] == 1:
            try:
                known[pred] = bool(eval_reg(lines, pred, env, i + 1, defs=defs))
            except (KeyError, AssertionError):
                pass
    return known


def reachable(lines: list[str], env: dict) -> set[int]:
    """Indices of the lines a CTA can execute when the special registers hold `env`: branches on a
    predicate computable from `env` go one way, every other branch both."""
    known = known_predicates(lines, env)
    labels = {ln[:-1]: i for i, ln in enumerate(lines) if re.fullmatch(r"\$?\w+:", ln)}
    seen, stack = {0}, [0]
    while stack:
        i = stack.pop()
        for j in successors(lines, labels, i, known):
            if j < len(lines) and j not in seen:
                seen.add(j)
                stack.append(j)
    return seen


def with_equal_predicates(lines: list[str], known: dict) -> dict:
    """`known` plus every predicate the compiler recomputed from the same comparison of the same
    registers (each register defined once), e.g. the allocator warp's test repeated before the free."""
    out = dict(known)
    defs = {}
    for ln in lines:
        m = re.match(r"(setp\.\S+)\s+(%p\d+),\s*(.+);", ln)
        if m:
            defs.setdefault(m.group(2), []).append((m.group(1), m.group(3).replace(" ", "")))
    single = {p: d[0] for p, d in defs.items() if len(d) == 1}

    def once(op):
        defs_of = sum(1 for ln in lines if re.match(rf"\S+\s+{re.escape(op)}(\||,)", ln))
        return re.fullmatch(r"-?\d+", op) or defs_of == 1

    for p, value in known.items():
        if p not in single or not all(once(x) for x in single[p][1].split(",")):
            continue
        for q, d in single.items():
            if d == single[p]:
                out[q] = value
    return out


_CMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
        "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


def compared_register(lines, pred: str) -> str:
    """The register a predicate compares with an immediate (`setp.<cmp>.<type> pred, %rX, imm`, the one
    definition of pred)."""
    defs = [m for ln in lines if (m := re.match(rf"setp\.\w+\.[bsu]32\s+{re.escape(pred)}, (%r\d+), -?\d+;", ln))]
    assert len(defs) == 1, (pred, defs)
    return defs[0].group(1)


def role_predicates(lines, reg: str, value: int) -> dict:
    """{pred: bool} for every `setp.<cmp>.<s32|b32|u32> %p, reg, imm` when `reg` (defined once, e.g. the
    warp index) holds `value`: the branches one warp role takes, for escapes_without."""
    defs = [ln for ln in lines if re.match(rf"\S+\s+{re.escape(reg)},", ln)]
    assert len(defs) == 1, (reg, defs)
    known = {}
    for ln in lines:
        m = re.match(rf"setp\.(\w+)\.[bsu]32\s+(%p\d+), {re.escape(reg)}, (-?\d+);", ln)
        if m and m.group(1) in _CMP:
            assert m.group(2) not in known, f"{m.group(2)} defined twice"
            known[m.group(2)] = _CMP[m.group(1)](value, int(m.group(3)))
    return known
