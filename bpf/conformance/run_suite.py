#!/usr/bin/env python3
"""Runs the eBPF conformance suite's tests/*.data against cisc-bpf-conformance.

Usage: run_suite.py PLUGIN TESTS_DIR [--cpu-version 4] [--verbose] [-- PLUGIN_ARGS...]

A stand-in for the suite's own runner (which needs boost): it parses each
.data file (-- asm / -- raw / -- mem / -- result / -- error), assembles the
suite's assembly dialect, skips tests that need a newer CPU version or a
group outside the default ones (packet, callx), starts the plugin with the
memory as its first argument and the program on stdin, and compares r0 (64
bits) or the error text. Prints one line per failing test and a summary.
"""
import os
import re
import struct
import subprocess
import sys

REGS = {f"{p}r{i}": i for i in range(16) for p in ("%", "")}
ALU = {"add": 0x0, "sub": 0x1, "mul": 0x2, "div": 0x3, "sdiv": 0x3, "or": 0x4, "and": 0x5,
       "lsh": 0x6, "rsh": 0x7, "neg": 0x8, "mod": 0x9, "smod": 0x9, "xor": 0xa, "mov": 0xb,
       "arsh": 0xc}
JMP = {"jeq": 0x1, "jgt": 0x2, "jge": 0x3, "jset": 0x4, "jne": 0x5, "jsgt": 0x6, "jsge": 0x7,
       "jlt": 0xa, "jle": 0xb, "jslt": 0xc, "jsle": 0xd}
SIZES = {"w": 0x00, "h": 0x08, "b": 0x10, "dw": 0x18}
ATOMIC = {"add": 0x00, "or": 0x40, "and": 0x50, "xor": 0xa0}


def num(s):
    s = s.strip()
    return int(s, 16) if "0x" in s.lower() else int(s, 10)


def reg(s):
    if s not in REGS:
        raise ValueError(f"invalid register {s}")
    return REGS[s]


def memop(s):
    m = re.fullmatch(r"\[\s*(%?r\d+)\s*(?:([+-])\s*(\w+))?\s*\]", s)
    if not m:
        raise ValueError(f"bad memory operand {s}")
    off = num(m.group(3)) if m.group(3) else 0
    return reg(m.group(1)), -off if m.group(2) == "-" else off


class Asm:
    def __init__(self):
        self.out = []      # [code, dst, src, off, imm]
        self.fix = {}      # index -> (label, field)
        self.labels = {}

    def emit(self, code, dst=0, src=0, off=0, imm=0):
        self.out.append([code, dst, src, off, imm])

    def target(self, s, field):
        if s[0] in "+-":
            return num(s)
        self.fix[len(self.out)] = (s, field)
        return 0

    def alu(self, mn, ops):
        cls, base = 0x07, mn
        if mn.endswith("32"):
            cls, base = 0x04, mn[:-2]
        elif mn.endswith("64"):
            base = mn[:-2]
        off = 1 if base in ("sdiv", "smod") else 0
        if base.startswith("movsx"):
            off, base = num(base[5:]), "mov"
        code = cls | ALU[base] << 4
        dst = reg(ops[0])
        if len(ops) == 2 and ops[1].lstrip("%").startswith("r") and ops[1] in REGS:
            self.emit(code | 0x08, dst, reg(ops[1]), off, 0)
        else:
            self.emit(code, dst, 0, off, num(ops[1]) if len(ops) == 2 else 0)

    def line(self, text):
        parts = [p for p in text.strip().split(" ") if p]
        if not parts:
            return
        mn, ops = parts[0], [p.rstrip(",") for p in parts[1:]]
        ops = [o for o in ops if o]
        if mn.endswith(":"):
            self.labels[mn[:-1]] = len(self.out)
            return
        if mn == "exit":
            self.labels.setdefault("exit", len(self.out))
            self.emit(0x95)
        elif mn == "ja":
            self.emit(0x05, off=self.target(ops[0], "off"))
        elif mn == "ja32":
            self.emit(0x06, imm=self.target(ops[0], "imm"))
        elif mn == "call":
            mode, tgt = (("helper", ops[0]) if len(ops) == 1 else (ops[0], ops[1]))
            if mode == "local":
                self.emit(0x85, src=1, imm=self.target(tgt, "imm"))
            elif mode == "runtime":
                self.emit(0x85, src=2, imm=num(tgt))
            elif tgt in REGS:
                self.emit(0x8d, dst=reg(tgt))
            else:
                self.emit(0x85, imm=num(tgt))
        elif mn == "callx":
            self.emit(0x8d, dst=reg(ops[0]))
        elif mn.rstrip("32") in JMP or mn in JMP:
            is32 = mn.endswith("32") and mn[:-2] in JMP
            code = (0x06 if is32 else 0x05) | JMP[mn[:-2] if is32 else mn] << 4
            dst = reg(ops[0])
            off = self.target(ops[2], "off")
            if ops[1] in REGS:
                self.emit(code | 0x08, dst, reg(ops[1]), off, 0)
            else:
                self.emit(code, dst, 0, off, num(ops[1]))
        elif mn == "lddw":
            v = num(ops[1]) & 0xFFFFFFFFFFFFFFFF
            self.emit(0x18, reg(ops[0]), 0, 0, v & 0xFFFFFFFF)
            self.emit(0x00, 0, 0, 0, v >> 32)
        elif re.fullmatch(r"ldxs?(dw|w|h|b)", mn):
            sx = mn.startswith("ldxs")
            size = SIZES[mn[4 if sx else 3:]]
            base, off = memop(ops[1])
            self.emit(0x01 | (0x80 if sx else 0x60) | size, reg(ops[0]), base, off)
        elif re.fullmatch(r"stx(dw|w|h|b)", mn):
            base, off = memop(ops[0])
            self.emit(0x63 | SIZES[mn[3:]], base, reg(ops[1]), off)
        elif re.fullmatch(r"st(dw|w|h|b)", mn):
            base, off = memop(ops[0])
            self.emit(0x62 | SIZES[mn[2:]], base, 0, off, num(ops[1]))
        elif re.fullmatch(r"(be|le|swap|bswap)(16|32|64)", mn):
            kind, bits = re.fullmatch(r"(be|le|swap|bswap)(\d+)", mn).groups()
            self.emit({"le": 0xd4, "be": 0xdc, "swap": 0xd7, "bswap": 0xd7}[kind], reg(ops[0]), imm=int(bits))
        elif mn == "lock":
            fetch = ops[0] == "fetch"
            if fetch:
                ops = ops[1:]
            op, rest = ops[0], ops[1:]
            w32 = op.endswith("32")
            op = op[:-2] if w32 else op
            base, off = memop(rest[0])
            imm = {"xchg": 0xe1, "cmpxchg": 0xf1}.get(op)
            if imm is None:
                imm = ATOMIC[op] | (0x01 if fetch else 0)
            self.emit(0xc3 if w32 else 0xdb, base, reg(rest[1]), off, imm)
        else:
            base = mn[:-2] if mn[-2:] in ("32", "64") else mn
            if base in ALU or base.startswith("movsx"):
                self.alu(mn, ops)
            else:
                raise ValueError(f"invalid mnemonic {mn}")

    def finish(self):
        for i, (label, field) in self.fix.items():
            if label not in self.labels:
                raise ValueError(f"invalid label {label}")
            rel = self.labels[label] - i - 1
            self.out[i][3 if field == "off" else 4] = rel
        blob = b""
        for code, dst, src, off, imm in self.out:
            blob += struct.pack("<BBhI", code, (dst & 0xF) | (src & 0xF) << 4,
                                ((off + 0x8000) & 0xFFFF) - 0x8000, imm & 0xFFFFFFFF)
        return blob


def parse(path):
    state, asm, raw, mem, result, error = None, [], [], [], None, None
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\r\n")
        if "--" in line:
            for key in ("asm", "result", "mem", "raw", "no register offset", " c", "error"):
                if key in line:
                    state = key
                    break
            else:
                return None   # unknown directive (e.g. "-- map"): the suite skips it
            continue
        if not line:
            continue
        if state == "asm":
            asm.append(line.split("#")[0])
        elif state == "result":
            result = line.strip()
        elif state == "mem":
            mem.append(line)
        elif state == "error":
            error = line
        elif state == "raw":
            raw += line.split()
    if result is None and error is None:
        return None
    if raw:
        code = b"".join(struct.pack("<Q", num(w) & 0xFFFFFFFFFFFFFFFF) for w in raw)
    else:
        a = Asm()
        for l in asm:
            a.line(l)
        code = a.finish()
    expect = 0 if result is None else num(result) & 0xFFFFFFFFFFFFFFFF
    membytes = bytes(int(b, 16) for b in " ".join(mem).split())
    return code, membytes, expect, error


def needs(code):
    """(cpu version, outside default groups) of a program, as the suite counts it."""
    version, extra = 1, False
    i = 0
    while i < len(code) // 8:
        op, regs, off, imm = struct.unpack_from("<BBhi", code, i * 8)
        src = regs >> 4
        cls = op & 7
        if op in (0x20, 0x28, 0x30, 0x40, 0x48, 0x50) or op == 0x8d:
            extra = True
        if op == 0x06 or op == 0xd7 or (op in (0x34, 0x37, 0x3c, 0x3f, 0x94, 0x97, 0x9c, 0x9f)
                                         and off == 1) or (op in (0xbc, 0xbf) and off in (8, 16, 32)):
            version = max(version, 4)
        elif (cls == 6 and op != 0x06) or op in (0xc3, 0xdb) or (op == 0x85 and src in (1, 2)):
            version = max(version, 3)
        elif op in (0xa5, 0xad, 0xb5, 0xbd, 0xc5, 0xcd, 0xd5, 0xdd):
            version = max(version, 2)
        i += 2 if op == 0x18 else 1
    return version, extra


def main():
    args = sys.argv[1:]
    plugin_args = []
    if "--" in args:
        plugin_args = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    verbose = "--verbose" in args
    cpu = 4
    if "--cpu-version" in args:
        cpu = int(args[args.index("--cpu-version") + 1])
    plugin, tests = args[0], args[1]
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(tests) for f in fs
                   if f.endswith(".data"))
    passed = failed = skipped = 0
    for path in files:
        name = os.path.relpath(path, tests)
        try:
            t = parse(path)
        except (ValueError, IndexError, KeyError) as e:
            print(f"FAIL {name}: cannot assemble: {e}")
            failed += 1
            continue
        if t is None or not t[0]:
            skipped += 1
            if verbose:
                print(f"SKIP {name}: no program or no result")
            continue
        code, mem, expect, error = t
        version, extra = needs(code)
        if version > cpu or extra:
            skipped += 1
            if verbose:
                print(f"SKIP {name}: needs v{version}{' and a non-default group' if extra else ''}")
            continue
        argv = [plugin] + ([" ".join(f"{b:02x}" for b in mem)] if mem else []) + plugin_args
        p = subprocess.run(argv, input=" ".join(f"{b:02x}" for b in code) + "\n",
                           capture_output=True, text=True, timeout=60)
        out = p.stdout.strip() or p.stderr.strip()
        if p.returncode != 0:
            ok = error is not None and out.split("\r")[0] == error
            why = f"exit {p.returncode}: {out}" + (f" (expected error '{error}')" if error else "")
        else:
            try:
                ok = int(out, 16) == expect and error is None
            except ValueError:
                ok = False
            why = f"r0 {out}, expected {expect:#x}" + (f" / error '{error}'" if error else "")
        if ok:
            passed += 1
            if verbose:
                print(f"PASS {name}")
        else:
            failed += 1
            print(f"FAIL {name}: {why}")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
