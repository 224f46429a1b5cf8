"""A reader of the PTX of one kernel, for the sm100 readiness tests: the kernel's instruction lines,
the immediates registers are set to, the expect-tx and barrier-init counts, the TMA destinations, and
its control flow (successors, a path from a line to the exit that avoids an instruction, the guard a
line runs under)."""

from __future__ import annotations

import re


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
