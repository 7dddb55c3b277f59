/*
 * bpf/verifier_print.c - register and state text for rejections and the
 * trace log.
 *
 * Notation: R3=in(id=2,off=4,r=8,var=[0,4095]) is an input-buffer pointer
 * 4 bytes (plus the variable part) after its base, with 8 bytes from the
 * base known to be inside the buffer; fp-16 is a stack pointer 16 bytes
 * below the frame top (fp-16@1 in frame 1); scalars print as a constant,
 * an unsigned range, or all their facts.
 */
#include <stdio.h>
#include <string.h>

#include "bpf/verifier_int.h"

const char *vm_vtype_name(enum vtype t)
{
    static const char *const names[] = {
        [VT_NONE] = "?",        [VT_SCALAR] = "scalar", [VT_CTX] = "ctx",
        [VT_STACK] = "fp",      [VT_IN] = "in",         [VT_IN_END] = "in_end",
        [VT_OUT] = "out",       [VT_OUT_END] = "out_end", [VT_RODATA] = "rodata",
        [VT_MEM] = "mem",
    };
    return t <= VT_MEM ? names[t] : "?";
}

const char *vm_vtype_desc(enum vtype t)
{
    static const char *const desc[] = {
        [VT_NONE] = "an uninitialised value",
        [VT_SCALAR] = "a scalar",
        [VT_CTX] = "the context",
        [VT_STACK] = "the stack",
        [VT_IN] = "input buffer",
        [VT_IN_END] = "the end of the input buffer",
        [VT_OUT] = "output buffer",
        [VT_OUT_END] = "the end of the output buffer",
        [VT_RODATA] = "read-only data",
        [VT_MEM] = "the state area",
    };
    return t <= VT_MEM ? desc[t] : "?";
}

static void var_text(const struct vreg *r, char *buf, size_t size)
{
    buf[0] = 0;
    if (vs_is_const(&r->v) && r->v.t.value == 0)
        return;
    char v[96];
    vs_format(&r->v, v, sizeof(v));
    snprintf(buf, size, ",var=%s", v);
}

/* ",lnk=#3+1": a pointer's variable part is b + 1 for the scalars linked
 * with id 3 (verifier_int.h invariant 7; "z": zero-extended). */
static void lnk_text(const struct vreg *r, char *buf, size_t size)
{
    buf[0] = 0;
    static const char *const scale[4] = {"", "x2", "x4", "x8"};
    char from[16] = "";
    if (r->lgid)   /* "@5": added to the part of the pointers with id 5 */
        snprintf(from, sizeof(from), "@%u", r->lgid);
    if (r->lid && (r->sflags & VS_ROW))   /* ",row=6*#3+0": invariant 11 */
        snprintf(buf, size, ",row=%u*#%u%+d", r->range, r->lid, r->loff);
    else if (r->lid)
        snprintf(buf, size, ",lnk=%s#%u%+d%s%s", r->sflags & VS_LZEXT ? "z" : "", r->lid, r->loff,
                 scale[vm_link_scale(r->sflags)], from);
}

/* "(=#3+1)": a scalar linked with id 3 (invariant 5): b + 1, or its
 * zero-extension ("z"), low byte ("l8"), or b << 32 ("s"). */
static void link_text(const struct vreg *r, char *buf, size_t size)
{
    size_t n = strlen(buf);
    if (r->lid) {   /* "(=#3+#5+1)": a sum link (invariant 10) */
        snprintf(buf + n, size - n, "(=#%u+#%u%+d)", r->lid, r->lgid, r->loff);
        n = strlen(buf);
    }
    if (!r->id)
        return;
    static const char *const scale[4] = {"", "x2", "x4", "x8"};
    const char *k = r->sflags == VS_ZEXT    ? "z"
                    : r->sflags == VS_SHL32 ? "s"
                    : r->sflags == VS_LOW8  ? "l8"
                                            : "";
    snprintf(buf + n, size - n, "(=%s#%u%+d%s)", k, r->id, r->off,
             scale[vm_link_scale(r->sflags)]);
}

void vm_reg_format(const struct vreg *r, char *buf, size_t size)
{
    char var[112], lnk[64];
    var_text(r, var, sizeof(var));
    lnk_text(r, lnk, sizeof(lnk));
    if (r->type > VT_SCALAR && (r->sflags & VS_WILD)) {
        snprintf(buf, size, "%s(wild)", vm_vtype_name(r->type));
        return;
    }
    switch (r->type) {
    case VT_NONE: snprintf(buf, size, "?"); break;
    case VT_SCALAR:
        vs_format(&r->v, buf, size);
        link_text(r, buf, size);
        for (unsigned k = 0; k < 2; k++) {   /* "(<=end-in#3-2)": distance bound */
            size_t n = strlen(buf);
            if (r->dist >> k & 1)   /* "(==end-in#3-2)": exactly that distance */
                snprintf(buf + n, size - n, "(%s=end-%s#%u%+d)",
                         r->dist & VM_DIST_EQ(k) ? "=" : "<",
                         vm_vtype_name(k ? VT_OUT : VT_IN), r->did[k], -r->doff[k]);
        }
        break;
    case VT_STACK:
        if (var[0])
            snprintf(buf, size, "fp(off=%d%s)@%u", r->off, var, r->frame);
        else
            snprintf(buf, size, "fp%d@%u", r->off, r->frame);
        break;
    case VT_IN:
    case VT_OUT:
        snprintf(buf, size, "%s(id=%u,off=%d,r=%u%s%s)", vm_vtype_name(r->type), r->id, r->off,
                 r->range, var, lnk);
        break;
    case VT_MEM:
        snprintf(buf, size, "mem(size=%u,off=%d%s)", r->range, r->off, var);
        break;
    case VT_IN_END:
    case VT_OUT_END: {
        unsigned k = r->type == VT_OUT_END;
        char lo[48] = "";
        if (r->dist >> k & 1)   /* ",>=in#3+1": invariant 12 */
            snprintf(lo, sizeof(lo), ",>=%s#%u%+d", vm_vtype_name(k ? VT_OUT : VT_IN), r->did[k],
                     r->doff[k]);
        snprintf(buf, size, "%s(off=%d%s%s)", vm_vtype_name(r->type), r->off, var, lo);
        break;
    }
    case VT_RODATA: {
        char obj[48] = "";
        if (r->rhi)   /* ",in=[8,12)": the object a table entry points to (invariant 14) */
            snprintf(obj, sizeof(obj), ",in=[%u,%u)", r->rlo, r->rhi);
        snprintf(buf, size, "rodata(off=%d%s%s%s)", r->off, var, obj,
                 r->sflags & VS_ROW ? lnk : "");
        break;
    }
    default:
        snprintf(buf, size, "%s(off=%d%s)", vm_vtype_name(r->type), r->off, var);
        break;
    }
}

void vm_regs_format(const struct venv *env, uint16_t mask, char *buf, size_t size)
{
    const struct vstate *st = env->cur;
    const struct vframe *fr = &st->frames[st->nframes - 1];
    size_t len = 0;
    buf[0] = 0;
    for (unsigned r = 0; r < VM_NREGS && len + 1 < size; r++) {
        if (!(mask & (1u << r)) || fr->regs[r].type == VT_NONE)
            continue;
        char t[192];
        vm_reg_format(&fr->regs[r], t, sizeof(t));
        int n = snprintf(buf + len, size - len, " R%u=%s", r, t);
        if (n < 0)
            break;
        len += (size_t)n;
    }
    if (len >= size)
        buf[size - 1] = 0;
}
