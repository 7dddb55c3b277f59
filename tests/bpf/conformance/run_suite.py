#!/usr/bin/env python3
"""Runs the eBPF conformance suite's .data files against cisc-bpf-conformance.

Usage:
  run_suite.py PLUGIN DIR [DIR...] [--cpu-version N] [--include-groups G,...]
               [--exclude-groups G,...] [--strict-asm] [--verbose] [-- PLUGIN_ARGS...]

A stand-in for the suite's own runner (bpf_conformance_runner, which needs
boost and the suite's sources): it follows the runner's rules as the suite
defines them (src/runner.cc, src/bpf_conformance.cc, src/bpf_test_parser.cc,
src/bpf_assembler.cc, src/opcode_names.h), so its verdicts are the ones the
real runner would give:

  * each DIR is scanned non-recursively for *.data (the suite's layout: run
    tests/ and tests/rfc9669/ as two directories);
  * a file is parsed into -- asm / -- raw / -- mem / -- result / -- error;
    an unknown directive (e.g. "-- map") or a file without instructions is
    SKIPped, as the suite does;
  * the program's required CPU version and conformance groups are computed
    from the suite's opcode table; a test needing a newer CPU or a group not
    enabled is SKIPped. Default groups: base32 base64 atomic32 atomic64
    divmul32 divmul64 (callx and packet must be included explicitly);
  * the plugin gets the memory (hex) as argv[1] when there is memory, then
    PLUGIN_ARGS, and the program as hex bytes on stdin;
  * exit 0: r0 (hex on stdout) must equal the 64-bit expected result;
    non-zero exit: PASS only if the test expects an error and stdout (or
    stderr when stdout is empty), cut at '\\r' and right-stripped, equals it;
    otherwise ERROR.

Assembler dialect differences between suite versions: the current assembler
wants %rN registers and rejects immediates that do not fit 32 bits; older
test-file versions (still the only stored ones for many files) use bare rN
and rely on truncation. Both are accepted by default (as the suite's older
assembler did); --strict-asm applies the current assembler's rules and
reports such files as BADTEST. A result that does not fit 64 bits makes the
real runner abort (std::stoull throws); it is reported as BADTEST.

Exit status: 0 when nothing FAILed, ERRORed or was a BADTEST.
"""
import os
import re
import struct
import subprocess
import sys

M64 = (1 << 64) - 1

# --------------------------------------------------------------------------
# Test-file parser (the suite's parse_test_file()).
# --------------------------------------------------------------------------

DIRECTIVES = (("asm", "asm"), ("result", "result"), ("mem", "mem"), ("raw", "raw"),
              ("no register offset", None), (" c", None), ("error", "error"))


class BadTest(Exception):
    """The test file itself cannot be used (the real runner would fail on it)."""


def parse_file(path):
    """Returns dict(asm, raw, mem, result, error) or None when the suite skips it."""
    state, asm, raw, mem, result, error = None, [], [], [], "", ""
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n").rstrip("\r")
            if "#" in line:
                line = line[:line.index("#")]
            if "--" in line:
                for key, st in DIRECTIVES:
                    if key in line:
                        state = st
                        break
                else:
                    return None        # unknown directive: the suite skips the file
                continue
            if not line:
                continue
            if state == "asm":
                asm.append(line)
            elif state == "result":
                result = line.strip()
            elif state == "mem":
                mem.append(line)
            elif state == "error":
                error = line
            elif state == "raw":
                raw.extend(line.split())
    if not error and not result:
        return None
    return {"asm": asm, "raw": raw, "mem": mem, "result": result, "error": error}


def parse_u64(text, what):
    """std::stoull as the suite uses it: hex when '0x' appears, else decimal."""
    t = text.strip()
    try:
        v = int(t, 16) if "0x" in t else int(t, 10)
    except ValueError:
        raise BadTest(f"{what} '{text}' is not a number")
    if v < 0:
        v &= M64                       # stoull accepts a leading '-' and wraps
    if v > M64:
        raise BadTest(f"{what} '{text}' does not fit in 64 bits (the runner aborts)")
    return v


# --------------------------------------------------------------------------
# Assembler (the suite's bpf_assembler()).
# --------------------------------------------------------------------------

ALU = {"add": 0x0, "sub": 0x1, "mul": 0x2, "div": 0x3, "sdiv": 0x3, "or": 0x4, "and": 0x5,
       "lsh": 0x6, "rsh": 0x7, "neg": 0x8, "mod": 0x9, "smod": 0x9, "xor": 0xa, "mov": 0xb,
       "movsx": 0xb, "arsh": 0xc}
JMP = {"jeq": 0x1, "jgt": 0x2, "jge": 0x3, "jset": 0x4, "jne": 0x5, "jsgt": 0x6, "jsge": 0x7,
       "jlt": 0xa, "jle": 0xb, "jslt": 0xc, "jsle": 0xd}
LDX = {"ldxw": 0x61, "ldxh": 0x69, "ldxb": 0x71, "ldxdw": 0x79,
       "ldxsw": 0x81, "ldxsh": 0x89, "ldxsb": 0x91}
ST = {"stw": 0x62, "sth": 0x6a, "stb": 0x72, "stdw": 0x7a}
STX = {"stxw": 0x63, "stxh": 0x6b, "stxb": 0x73, "stxdw": 0x7b}
ATOMIC = {"add": 0x00, "or": 0x40, "and": 0x50, "xor": 0xa0, "xchg": 0xe1, "cmpxchg": 0xf1}
ENDIAN = {"le": 0xd4, "be": 0xdc, "swap": 0xd7, "bswap": 0xd7}


class Asm:
    def __init__(self, strict):
        self.strict = strict
        self.out = []        # [code, dst, src, off, imm]
        self.fix = {}        # slot -> label
        self.labels = {}
        self.exits = 0

    def reg(self, s):
        m = re.fullmatch(r"%r(\d+)" if self.strict else r"%?r(\d+)", s)
        if not m or int(m.group(1)) > 15:
            raise BadTest(f"Invalid register: {s}")
        return int(m.group(1))

    def is_reg(self, s):
        return s.startswith("%") or (not self.strict and re.fullmatch(r"r\d+", s) is not None)

    def imm32(self, s):
        v = parse_u64(s, "immediate") if not s.lstrip().startswith("-") else int(s, 0)
        if self.strict and ("0x" in s and v > 0xFFFFFFFF or
                            "0x" not in s and not -2**31 <= int(s, 10) < 2**31):
            raise BadTest(f"Immediate out of 32-bit range: {s}")
        return v & 0xFFFFFFFF

    def imm64(self, s):
        return (int(s, 0) if s.lstrip().startswith("-") else parse_u64(s, "immediate")) & M64

    def offset(self, s):
        v = int(s, 16) if "0x" in s else int(s, 10)
        if self.strict and not -2**15 <= v < 2**16:
            raise BadTest(f"Offset out of 16-bit range: {s}")
        return ((v & 0xFFFF) ^ 0x8000) - 0x8000

    def target(self, s, field):
        if s[0] in "+-":
            return self.offset(s)
        self.fix[len(self.out)] = s
        return 0

    def memop(self, s):
        m = re.fullmatch(r"\[([^\]+-]+)([+-][^\]]+)?\]", s)
        if not m:
            raise BadTest(f"Failed to decode register and offset: {s}")
        return self.reg(m.group(1)), self.offset(m.group(2)) if m.group(2) else 0

    def emit(self, code, dst=0, src=0, off=0, imm=0):
        self.out.append([code, dst, src, off, imm])

    def alu(self, mn, ops):
        off = 1 if mn.startswith(("sdiv", "smod")) else 0
        cls, op = (0x04, mn[:-2]) if mn.endswith("32") else (0x07, mn[:-2] if mn.endswith("64") else mn)
        if op.startswith("movsx"):
            off, op = int(op[5:]), "movsx"
        if op not in ALU:
            raise BadTest(f"Invalid mnemonic: {mn}")
        code = cls | ALU[op] << 4
        want = 1 if op == "neg" else 2
        if len(ops) != want:
            raise BadTest(f"Invalid number of operands for mnemonic: {mn}")
        if want == 2 and self.is_reg(ops[1]):
            self.emit(code | 0x08, self.reg(ops[0]), self.reg(ops[1]), off)
        else:
            self.emit(code, self.reg(ops[0]), 0, off, self.imm32(ops[1]) if want == 2 else 0)

    def call(self, ops):
        if len(ops) not in (1, 2):
            raise BadTest("Invalid number of operands for mnemonic: call")
        mode, tgt = ("helper", ops[0]) if len(ops) == 1 else ops
        if mode == "helper" and self.is_reg(tgt):
            self.emit(0x8d, dst=self.reg(tgt))
        elif mode == "helper":
            self.emit(0x85, imm=self.imm32(tgt))
        elif mode == "local":
            self.emit(0x85, src=1, imm=self.target(tgt, "imm"))
        elif mode == "runtime":
            self.emit(0x85, src=2, imm=self.imm32(tgt))
        else:
            raise BadTest("Invalid call mode")

    def jump(self, mn, ops):
        is32 = mn.endswith("32")
        base = mn[:-2] if is32 else mn
        if len(ops) != 3:
            raise BadTest(f"Invalid number of operands for mnemonic: {mn}")
        code = (0x06 if is32 else 0x05) | JMP[base] << 4
        dst, off = self.reg(ops[0]), self.target(ops[2], "off")
        if self.is_reg(ops[1]):
            self.emit(code | 0x08, dst, self.reg(ops[1]), off)
        else:
            self.emit(code, dst, 0, off, self.imm32(ops[1]))

    def lock(self, ops):
        fetch = ops[:1] == ["fetch"]
        ops = ops[1:] if fetch else ops
        w32 = bool(ops) and ops[0].endswith("32")
        op = ops[0][:-2] if w32 else (ops[0] if ops else "")
        if len(ops) != 3 or op not in ATOMIC:
            raise BadTest("Invalid number of operands for lock")
        dst, off = self.memop(ops[1])
        imm = ATOMIC[op] | (0x01 if fetch else 0)
        self.emit(0xc3 if w32 else 0xdb, dst, self.reg(ops[2]), off, imm)

    def line(self, text):
        parts = text.split()
        if not parts:
            return
        mn, ops = parts[0], [p[:-1] if p.endswith(",") else p for p in parts[1:]]
        if mn.endswith(":"):
            if mn[:-1] in self.labels:
                raise BadTest(f"Duplicate label ({mn[:-1]})")
            self.labels[mn[:-1]] = len(self.out)
        elif mn == "exit":
            if self.exits == 0:
                self.labels["exit"] = len(self.out)
            self.exits += 1
            self.emit(0x95)
        elif mn == "ja":
            self.emit(0x05, off=self.target(ops[0], "off"))
        elif mn == "ja32":
            self.emit(0x06, imm=self.target(ops[0], "imm"))
        elif mn == "call":
            self.call(ops)
        elif mn == "lock":
            self.lock(ops)
        elif mn in JMP or (mn.endswith("32") and mn[:-2] in JMP):
            self.jump(mn, ops)
        elif mn == "lddw":
            self.emit(0x18, self.reg(ops[0]), 0, 0, self.imm64(ops[1]) & 0xFFFFFFFF)
            self.emit(0x00, 0, 0, 0, self.imm64(ops[1]) >> 32)
        elif mn in LDX:
            src, off = self.memop(ops[1])
            self.emit(LDX[mn], self.reg(ops[0]), src, off)
        elif mn in ST:
            dst, off = self.memop(ops[0])
            self.emit(ST[mn], dst, 0, off, self.imm32(ops[1]))
        elif mn in STX:
            dst, off = self.memop(ops[0])
            self.emit(STX[mn], dst, self.reg(ops[1]), off)
        elif re.fullmatch(r"(le|be|swap|bswap)(16|32|64)", mn):
            kind, bits = re.fullmatch(r"([a-z]+)(\d+)", mn).groups()
            self.emit(ENDIAN[kind], self.reg(ops[0]), imm=int(bits))
        else:
            self.alu(mn, ops)

    def finish(self):
        for slot, label in self.fix.items():
            if label not in self.labels:
                raise BadTest(f"Invalid label: {label}")
            rel = self.labels[label] - slot - 1
            if self.out[slot][0] in (0x85, 0x06):
                self.out[slot][4] = rel & 0xFFFFFFFF
            else:
                self.out[slot][3] = ((rel & 0xFFFF) ^ 0x8000) - 0x8000
        return [tuple(i) for i in self.out]


def assemble(lines, strict):
    a = Asm(strict)
    for text in lines:
        a.line(text)
    return a.finish()


def encode(insns):
    return b"".join(struct.pack("<BBhI", c, (d & 15) | (s & 15) << 4, o, i & 0xFFFFFFFF)
                    for c, d, s, o, i in insns)


def decode_raw(words):
    out = []
    for w in words:
        v = parse_u64(w, "raw instruction")
        c, r, o, i = struct.unpack("<BBhI", struct.pack("<Q", v))
        out.append((c, r & 15, r >> 4, o, i))
    return out


# --------------------------------------------------------------------------
# CPU version and conformance groups (the suite's opcode_names.h table).
# --------------------------------------------------------------------------

GROUPS = ("base32", "base64", "atomic32", "atomic64", "divmul32", "divmul64", "packet", "callx")
DEFAULT_GROUPS = {"base32", "base64", "atomic32", "atomic64", "divmul32", "divmul64"}
JMP32_V3 = {0x16, 0x1e, 0x26, 0x2e, 0x36, 0x3e, 0x46, 0x4e, 0x56, 0x5e, 0x66, 0x6e, 0x76, 0x7e,
            0xa6, 0xae, 0xb6, 0xbe, 0xc6, 0xce, 0xd6, 0xde}
ATOMIC_IMMS = {0x00, 0x01, 0x40, 0x41, 0x50, 0x51, 0xa0, 0xa1, 0xe1, 0xf1}
DIVMUL = {0x24: 32, 0x2c: 32, 0x34: 32, 0x3c: 32, 0x94: 32, 0x9c: 32,
          0x27: 64, 0x2f: 64, 0x37: 64, 0x3f: 64, 0x97: 64, 0x9f: 64}


def requirement(c, src, off, imm):
    """(cpu version, group) of one instruction, or None when the table lacks it."""
    if c in (0x20, 0x28, 0x30, 0x40, 0x48, 0x50):
        return 1, "packet"
    if c == 0x8d:
        return 1, "callx"
    if c in DIVMUL:
        if c in (0x24, 0x2c, 0x27, 0x2f):
            return 1, f"divmul{DIVMUL[c]}"
        return ({0: 1, 1: 4}.get(off), f"divmul{DIVMUL[c]}") if off in (0, 1) else None
    if c in (0xc3, 0xdb):
        return (3, "atomic32" if c == 0xc3 else "atomic64") if imm in ATOMIC_IMMS else None
    if c == 0x06:
        return 4, "base32"
    if c in JMP32_V3:
        return 3, "base32"
    if c == 0x85:
        return {0: (1, "base32"), 1: (3, "base32"), 2: (3, "base32")}.get(src)
    if c in (0xa5, 0xad, 0xb5, 0xbd, 0xc5, 0xcd, 0xd5, 0xdd):
        return 2, "base64"
    if c == 0xd7:
        return 4, "base64" if imm == 64 else "base32"
    if c in (0xd4, 0xdc):
        return {16: (1, "base32"), 32: (1, "base32"), 64: (1, "base64")}.get(imm)
    if c == 0xbc:
        return {0: (1, "base32"), 8: (4, "base32"), 16: (4, "base32")}.get(off)
    if c == 0xbf:
        return {0: (1, "base64"), 8: (4, "base64"), 16: (4, "base64"), 32: (4, "base64")}.get(off)
    if c == 0x18:
        return (1, "base64") if src <= 6 else None
    if c in (0x81, 0x89, 0x91):        # ldxsw, ldxsh, ldxsb (MEMSX): new in v4, 64-bit results
        return 4, "base64"             # (not in the suite's table, which does not gate them)
    if c == 0x99 or c & 7 in (0, 1) and c not in (0x61, 0x69, 0x71, 0x79):
        return None                    # not in the suite's table: no requirement
    return 1, "base64" if c & 7 in (3, 5, 7) or c in (0x7a, 0x79) else "base32"


def requirements(insns):
    version, groups, i = 1, set(), 0
    while i < len(insns):
        c, _, s, o, imm = insns[i]
        req = requirement(c, s, o, imm - (1 << 32) if imm & 0x80000000 else imm)
        if req and req[0]:
            version = max(version, req[0])
            groups.add(req[1])
        i += 2 if c == 0x18 else 1
    return version, groups


# --------------------------------------------------------------------------
# Running.
# --------------------------------------------------------------------------

def run_one(plugin, plugin_args, path, opts):
    """Returns (verdict, message)."""
    t = parse_file(path)
    if t is None:
        return "SKIP", "no instructions, or an unknown directive (the suite skips it)"
    try:
        insns = decode_raw(t["raw"]) if t["raw"] else assemble(t["asm"], opts["strict"])
        expect = parse_u64(t["result"], "result") if t["result"] else 0
        mem = bytes(int(b, 16) & 0xFF for b in " ".join(t["mem"]).split())
    except BadTest as e:
        return "BADTEST", str(e)
    if not insns:
        return "SKIP", "no instructions"
    version, groups = requirements(insns)
    if version > opts["cpu"] or groups - opts["groups"]:
        missing = ", ".join(sorted(groups - opts["groups"]))
        return "SKIP", f"needs cpu v{version}" + (f" and group(s) {missing}" if missing else "")
    argv = [plugin] + ([" ".join(f"{b:02x}" for b in mem)] if mem else []) + plugin_args
    p = subprocess.run(argv, input=" ".join(f"{b:02x}" for b in encode(insns)) + "\n",
                       capture_output=True, text=True, timeout=120)
    out, err = p.stdout.rstrip("\n"), p.stderr.rstrip("\n")
    if p.returncode != 0:
        got = (out or err).split("\r")[0].rstrip()
        if not t["error"]:
            return "ERROR", f"plugin exit {p.returncode}: {got}"
        if got == t["error"]:
            return "PASS", ""
        return "FAIL", f"plugin exit {p.returncode}: '{got}', expected error '{t['error']}'"
    try:
        r0 = int(out.strip().replace("0x", ""), 16) & M64
    except ValueError:
        return "ERROR", f"unparsable r0 '{out}'"
    if r0 != expect:
        return "FAIL", f"r0 {r0:#x}, expected {expect:#x}"
    return "PASS", ""


def parse_args(argv):
    plugin_args = []
    if "--" in argv:
        plugin_args = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    opts = {"cpu": 4, "groups": set(DEFAULT_GROUPS), "strict": False, "verbose": False}
    pos, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--cpu-version":
            opts["cpu"] = int(argv[i + 1].lstrip("v"))
            i += 1
        elif a in ("--include-groups", "--exclude-groups"):
            names = set(argv[i + 1].split(","))
            if names - set(GROUPS):
                sys.exit(f"unknown group(s): {', '.join(sorted(names - set(GROUPS)))}")
            opts["groups"] = opts["groups"] | names if a == "--include-groups" else opts["groups"] - names
            i += 1
        elif a == "--strict-asm":
            opts["strict"] = True
        elif a == "--verbose":
            opts["verbose"] = True
        else:
            pos.append(a)
        i += 1
    if len(pos) < 2:
        sys.exit(__doc__)
    return pos[0], pos[1:], plugin_args, opts


def main():
    plugin, dirs, plugin_args, opts = parse_args(sys.argv[1:])
    counts = {}
    print(f"cpu v{opts['cpu']}, groups {' '.join(sorted(opts['groups']))}, plugin args {plugin_args}")
    for d in dirs:
        files = sorted(f for f in os.listdir(d) if f.endswith(".data") and
                       os.path.isfile(os.path.join(d, f)))
        for f in files:
            verdict, msg = run_one(plugin, plugin_args, os.path.join(d, f), opts)
            counts[verdict] = counts.get(verdict, 0) + 1
            if verdict != "PASS" or opts["verbose"]:
                print(f"{verdict} {os.path.join(d, f)}" + (f": {msg}" if msg else ""))
    total = sum(counts.values())
    print(f"{total} files: " + ", ".join(f"{counts.get(k, 0)} {k.lower()}"
                                         for k in ("PASS", "FAIL", "ERROR", "BADTEST", "SKIP")))
    return 0 if not (counts.get("FAIL") or counts.get("ERROR") or counts.get("BADTEST")) else 1


if __name__ == "__main__":
    sys.exit(main())
