#!/usr/bin/env python3
"""man/mkman.py - the man pages of ciscfs, generated from their one source.

  mkman.py cli CISC OUTDIR VERSION     cisc(1) and cisc-CMD(1) for every
                                       subcommand, from `cisc --help` and
                                       `cisc CMD --help` (the tables the
                                       command line itself prints)
  mkman.py lib OUTDIR VERSION HDR...   libcisc(3) and one page per CISC_API
                                       call, from the comments of the public
                                       headers (as liburing documents each
                                       of its calls)

Only the Python standard library: no new build dependency beyond python3.
"""
import os
import re
import subprocess
import sys

DATE = "2026"


def roff(text):
    """Text as roff: backslashes escaped, no line read as a request."""
    out = []
    for line in text.split("\n"):
        line = line.replace("\\", "\\e")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def page(name, section, title, version, sections):
    head = '.TH "%s" "%s" "%s" "ciscfs %s" "%s"\n' % (
        name.upper(), section, DATE, version, title)
    body = ""
    for heading, text, pre in sections:
        body += ".SH %s\n" % heading
        if pre is None:   # already roff
            body += text + "\n"
        else:
            body += (".nf\n%s\n.fi\n" % roff(text)) if pre else (roff(text) + "\n")
    return head + body


def write(outdir, sub, fname, text):
    d = os.path.join(outdir, sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, fname), "w") as f:
        f.write(text)


def exit_status(text):
    """The "Exit status: ..." paragraph of a help text (cmd/cmd.h's table
    as the command prints it), or None."""
    m = re.search(r"^Exit status: (.*?)(?:\n\n|\Z)", text, re.M | re.S)
    return " ".join(m.group(1).split()) if m else None


def help_text(cisc, args):
    r = subprocess.run([cisc] + args, stdout=subprocess.PIPE, check=True)
    return r.stdout.decode()


def cli(cisc, outdir, version):
    overview = help_text(cisc, ["--help"])
    cmds = re.findall(r"^  (\S+)\s+(.*)$", overview.split("Commands:")[1], re.M)
    see = ", ".join("cisc-%s(1)" % c for c, _ in cmds)
    common = exit_status(overview)
    write(outdir, "man1", "cisc.1", page("cisc", 1, "ciscfs manual", version, [
        ("NAME", "cisc \\- a computational storage device simulator", None),
        ("SYNOPSIS", "cisc COMMAND [ARGS]...", True),
        ("DESCRIPTION", overview, True),
        ("EXIT STATUS", common, False),
        ("FILES", "/sbin/mount.ciscfs, /sbin/mount.fuse.ciscfs: the mount(8) helpers "
                  "(mount -t ciscfs IMAGE DIR -o OPTIONS).", False),
        ("SEE ALSO", see + ", libcisc(3), mount(8), fstab(5)", False)]))
    for c, summary in cmds:
        text = help_text(cisc, [c, "--help"])
        usage = "\n".join(l for l in text.split("\n\n")[0].split("\n"))
        write(outdir, "man1", "cisc-%s.1" % c, page("cisc-" + c, 1, "ciscfs manual", version, [
            ("NAME", "cisc-%s \\- %s" % (c, roff(summary)), None),
            ("SYNOPSIS", usage.replace("usage: ", ""), True),
            ("DESCRIPTION", text, True),
            ("EXIT STATUS", exit_status(text) or common, False),
            ("SEE ALSO", "cisc(1)", False)]))
    print("mkman: %d command pages" % (len(cmds) + 1))


COMMENT = re.compile(r"/\*(.*?)\*/", re.S)
DECL = re.compile(r"CISC_API\s+([^;{]*?\b(cisc_\w+)\s*\([^;{]*\))\s*;", re.S)


def clean_comment(c):
    lines = [re.sub(r"^\s*\* ?", "", l) for l in c.strip("*").split("\n")]
    return "\n".join(lines).strip()


def calls(header):
    """(name, prototype, doc) for every CISC_API call, in order: doc is the
    comment right above it, or above the group of calls it belongs to."""
    src = open(header).read()
    out, last_doc, last_end = [], "", 0
    for m in DECL.finditer(src):
        between = src[last_end:m.start()]
        docs = COMMENT.findall(between)
        # a comment right above (only blank space after it) documents this call
        if docs and between.rstrip().endswith("*/"):
            last_doc = clean_comment(docs[-1])
        proto = re.sub(r"\s+", " ", m.group(1)).strip() + ";"
        out.append((m.group(2), proto, last_doc))
        last_end = m.end()
    return out


def lib(outdir, version, headers):
    pages = []
    for h in headers:
        inc = "cisc/" + os.path.basename(h)
        for name, proto, doc in calls(h):
            pages.append(name)
            write(outdir, "man3", name + ".3", page(name, 3, "libcisc manual", version, [
                ("NAME", "%s \\- libcisc call" % name, None),
                ("SYNOPSIS", "#include <cisc/cisc.h>    /* declared in <%s> */\n\n%s\n\n"
                             "Link with -lcisc (pkg-config --libs libcisc)."
                             % (inc, proto), True),
                ("DESCRIPTION", doc or "See <%s>." % inc, True),
                ("RETURN VALUE", "0, a non-negative count, or a negative errno value, as "
                                 "described above; cisc_strerror(3) gives its message.", False),
                ("SEE ALSO", "libcisc(3), cisc(1)", False)]))
    top = COMMENT.search(open(headers[0]).read())
    write(outdir, "man3", "libcisc.3", page("libcisc", 3, "libcisc manual", version, [
        ("NAME", "libcisc \\- the client library of a ciscfs device", None),
        ("SYNOPSIS", "#include <cisc/cisc.h>\n\ncc prog.c $(pkg-config --cflags --libs libcisc)",
         True),
        ("DESCRIPTION", clean_comment(top.group(1)) if top else "", True),
        ("CALLS", "\n".join(sorted(pages)), True),
        ("SEE ALSO", "cisc(1)", False)]))
    print("mkman: %d library pages" % (len(pages) + 1))


def main(argv):
    if len(argv) >= 5 and argv[1] == "cli":
        return cli(argv[2], argv[3], argv[4])
    if len(argv) >= 5 and argv[1] == "lib":
        return lib(argv[2], argv[3], argv[4:])
    sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
