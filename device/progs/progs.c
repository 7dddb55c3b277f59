/* device/progs/progs.c - the program registry: the table, building (load +
 * verify), ownership, limits, list/show, references (see progs.h). */
#include "device/progs/progs_int.h"

#include "bpf/interp.h"
#include "bpf/jit_x86_64.h"
#include "bpf/loader.h"
#include "bpf/verifier.h"
#include "common/clock.h"
#include "device/engine/sysdir.h"

#include <errno.h>
#include <pwd.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void progs_logf(struct progs *p, const char *fmt, ...)
{
    char line[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (p->log)
        p->log(p->log_arg, line);
    else
        fprintf(stderr, "cisc device: %s\n", line);
}

/* ---- building ---------------------------------------------------------- */

static void object_names(struct vm_object *obj, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < vm_object_nprogs(obj) && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "",
                                vm_object_prog(obj, i)->name);
}

/* The program func of obj, taken out of it; msg says why when NULL. */
static struct vm_prog *take_prog(struct vm_object *obj, const char *func, char *msg,
                                 size_t msglen, int *rc)
{
    struct vm_prog *vp = vm_object_find(obj, func && *func ? func : NULL);
    if (vp)
        return vm_object_take(obj, vp);
    char names[512];
    object_names(obj, names, sizeof(names));
    if (func && *func)
        snprintf(msg, msglen, "no program '%s' in the object (it has: %s)", func, names);
    else
        snprintf(msg, msglen, "the object has %u programs (%s): choose one with --prog",
                 vm_object_nprogs(obj), names);
    *rc = func && *func ? -ENOENT : -EINVAL;
    return NULL;
}

static int verify_prepare(struct vm_prog *vp, bool jit, char *msg, size_t msglen)
{
    struct vm_verify_result res;
    memset(&res, 0, sizeof(res));
    int r = vm_verify(vp, NULL, &res);
    if (r) {
        snprintf(msg, msglen, "program '%s' rejected: %s", vp->name,
                 res.msg[0] ? res.msg : strerror(-r));
        return r;
    }
    r = vm_prepare(vp);
    if (r)
        snprintf(msg, msglen, "program '%s': cannot prepare it: %s", vp->name, strerror(-r));
    else if (jit && (r = vm_jit_compile(vp)) == -ENOTSUP)
        r = 0;   /* no JIT here: the interpreter runs it */
    else if (r)
        snprintf(msg, msglen, "program '%s': cannot compile it: %s", vp->name, strerror(-r));
    return r;
}

int progs_build(const void *obj, size_t size, const char *func, bool jit,
                struct vm_prog **out, char *msg, size_t msglen)
{
    struct vm_object *o = NULL;
    int r = vm_object_load(obj, size, NULL, &o, msg, msglen);
    if (r)
        return r;
    struct vm_prog *vp = take_prog(o, func, msg, msglen, &r);
    vm_object_free(o);
    if (!vp)
        return r;
    r = verify_prepare(vp, jit, msg, msglen);
    if (r) {
        vm_prog_free(vp);
        return r;
    }
    *out = vp;
    return 0;
}

/* ---- the table (under p->lock) -------------------------------------------- */

static struct progs_prog *find_id(struct progs *p, uint32_t id)
{
    uint32_t lo = 0, hi = p->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (p->tab[mid]->info.id == id)
            return p->tab[mid];
        if (p->tab[mid]->info.id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The program uid means by (owner, name) (progs.h "Names"): owner's, or
 * for PROGS_ANY_OWNER uid's own, else the one program of that name; NULL
 * when none, or several and none uid's, are called so. */
static struct progs_prog *find_name(struct progs *p, uint32_t uid, uint32_t owner,
                                    const char *name)
{
    struct progs_prog *other = NULL;
    unsigned others = 0;
    for (uint32_t i = 0; name && i < p->n; i++) {
        struct progs_prog *pp = p->tab[i];
        if (strcmp(pp->info.name, name))
            continue;
        if (pp->info.owner == (owner == PROGS_ANY_OWNER ? uid : owner))
            return pp;
        if (owner == PROGS_ANY_OWNER) {
            other = pp;
            others++;
        }
    }
    return others == 1 ? other : NULL;
}

/* The program uid names by id (when nonzero) or by a resolved name. */
static struct progs_prog *find(struct progs *p, uint32_t uid, uint32_t id,
                               const struct progs_name *n)
{
    if (id)
        return find_id(p, id);
    return n ? find_name(p, uid, n->owner, n->name) : NULL;
}

int progs_name_parse(const char *s, struct progs_name *out)
{
    const char *slash = s ? strchr(s, '/') : NULL;
    out->owner = PROGS_ANY_OWNER;
    out->name = s;
    if (!slash)
        return 0;
    char who[PROGS_NAME_MAX], *end;
    size_t n = (size_t)(slash - s);
    if (n == 0 || n >= sizeof(who))
        return -ENOENT;
    memcpy(who, s, n);
    who[n] = '\0';
    out->name = slash + 1;
    unsigned long v = strtoul(who, &end, 10);
    if (who[0] >= '0' && who[0] <= '9' && !*end && v < PROGS_ANY_OWNER) {
        out->owner = (uint32_t)v;
        return 0;
    }
    struct passwd pw, *res = NULL;
    char buf[2048];
    if (getpwnam_r(who, &pw, buf, sizeof(buf), &res) || !res)
        return -ENOENT;
    out->owner = (uint32_t)res->pw_uid;
    return 0;
}

int progs_insert(struct progs *p, struct progs_prog *pp)
{
    if (p->n == p->cap) {
        uint32_t cap = p->cap ? 2 * p->cap : 16;
        struct progs_prog **t = realloc(p->tab, cap * sizeof(*t));
        if (!t)
            return -ENOMEM;
        p->tab = t;
        p->cap = cap;
    }
    uint32_t i = p->n;
    while (i > 0 && p->tab[i - 1]->info.id > pp->info.id) {
        p->tab[i] = p->tab[i - 1];
        i--;
    }
    p->tab[i] = pp;
    p->n++;
    if (pp->prog)
        p->insns += pp->info.insns;
    return 0;
}

static void table_remove(struct progs *p, struct progs_prog *pp)
{
    uint32_t i = 0;
    while (i < p->n && p->tab[i] != pp)
        i++;
    if (i == p->n)
        return;
    memmove(&p->tab[i], &p->tab[i + 1], (p->n - i - 1) * sizeof(p->tab[0]));
    p->n--;
    if (pp->prog)
        p->insns -= pp->info.insns;
    pp->gone = true;
}

struct progs_prog *progs_entry_new(struct progs *p, const struct progs_info *info,
                                   struct vm_prog *prog, const char *why)
{
    struct progs_prog *pp = calloc(1, sizeof(*pp));
    if (!pp)
        return NULL;
    pp->reg = p;
    pp->refs = 1;
    pp->info = *info;
    pp->prog = prog;
    if (why && !(pp->why = strdup(why))) {
        free(pp);
        return NULL;
    }
    pthread_mutex_init(&pp->trace_lock, NULL);
    return pp;
}

static void entry_free(struct progs_prog *pp)
{
    vm_prog_free(pp->prog);
    free(pp->why);
    pthread_mutex_destroy(&pp->trace_lock);
    free(pp);
}

void progs_put(struct progs_prog *pp)
{
    if (pp && __atomic_sub_fetch(&pp->refs, 1, __ATOMIC_ACQ_REL) == 0)
        entry_free(pp);
}

/* A consistent copy of pp's info (counters read atomically). */
static void snapshot(const struct progs_prog *pp, struct progs_info *out)
{
    *out = pp->info;
    out->runs = __atomic_load_n(&pp->info.runs, __ATOMIC_RELAXED);
    out->invocations = __atomic_load_n(&pp->info.invocations, __ATOMIC_RELAXED);
    out->insns_run = __atomic_load_n(&pp->info.insns_run, __ATOMIC_RELAXED);
    out->budget_hits = __atomic_load_n(&pp->info.budget_hits, __ATOMIC_RELAXED);
    out->errors = __atomic_load_n(&pp->info.errors, __ATOMIC_RELAXED);
    out->bytes_in = __atomic_load_n(&pp->info.bytes_in, __ATOMIC_RELAXED);
    out->bytes_out = __atomic_load_n(&pp->info.bytes_out, __ATOMIC_RELAXED);
}

/* ---- loading and unloading ------------------------------------------------- */

/* Names: 1..63 of [A-Za-z0-9_.-], not all digits (those are ids). */
static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    bool digits = true;
    if (n == 0 || n >= PROGS_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && c != '_' && c != '.' && c != '-')
            return false;
        digits &= c >= '0' && c <= '9';
    }
    return !digits;
}

/* uid's programs and their object bytes (under p->lock). */
static void held_by(struct progs *p, uint32_t uid, uint32_t *n, uint64_t *bytes)
{
    *n = 0;
    *bytes = 0;
    for (uint32_t i = 0; i < p->n; i++)
        if (p->tab[i]->info.owner == uid) {
            (*n)++;
            *bytes += p->tab[i]->info.obj_size;
        }
}

/* The per-user quotas (root has none). */
static int user_room(struct progs *p, uint32_t uid, size_t size, char *msg, size_t msglen)
{
    uint32_t n;
    uint64_t bytes;
    held_by(p, uid, &n, &bytes);
    if (n >= p->lim.max_progs_user)
        return snprintf(msg, msglen, "uid %u holds %u programs, the per-user limit (cisc up "
                        "--max-progs-per-user)", uid, n), -EDQUOT;
    if (bytes + size > p->lim.max_bytes_user)
        return snprintf(msg, msglen, "an object of %zu bytes does not fit: uid %u's programs "
                        "hold %llu of %llu bytes (cisc up --max-prog-bytes-per-user)", size,
                        uid, (unsigned long long)bytes,
                        (unsigned long long)p->lim.max_bytes_user), -EDQUOT;
    return 0;
}

/* The device-wide limits; users together leave an eighth of each
 * (rounded up: at least one program) to root, so that no user can lock
 * root out. */
static int device_room(struct progs *p, uint32_t uid, uint32_t ninsns, char *msg, size_t msglen)
{
    uint32_t slots = uid ? p->lim.max_progs - (p->lim.max_progs + 7) / 8 : p->lim.max_progs;
    uint64_t insns = uid ? p->lim.max_insns - (p->lim.max_insns + 7) / 8 : p->lim.max_insns;
    const char *why = uid ? " (users may fill seven eighths of it; the rest is root's)" : "";
    if (p->n >= slots)
        return snprintf(msg, msglen, "the device holds %u programs, its limit (cisc up "
                        "--max-progs %u)%s", p->n, p->lim.max_progs, why), -EDQUOT;
    if (p->insns + ninsns > insns)
        return snprintf(msg, msglen, "program of %u instructions does not fit: the device's "
                        "programs hold %llu of %llu instructions (cisc up --max-prog-insns)%s",
                        ninsns, (unsigned long long)p->insns, (unsigned long long)insns, why),
               -EDQUOT;
    return 0;
}

/* Checks the name (unique per owner) and the limits for a new program
 * of ninsns and takes an id (under p->lock). */
static int admit(struct progs *p, const struct progs_load_req *rq, const char *name,
                 uint32_t ninsns, uint32_t *id, char *msg, size_t msglen)
{
    int r = 0;
    pthread_mutex_lock(&p->lock);
    struct progs_prog *mine = find_name(p, rq->uid, rq->uid, name);
    if (mine) {
        snprintf(msg, msglen, "a program of yours named '%s' exists (id %u): unload it or "
                 "choose another --name", name, mine->info.id);
        r = -EEXIST;
    }
    if (!r)
        r = device_room(p, rq->uid, ninsns, msg, msglen);
    if (!r && rq->uid != 0)
        r = user_room(p, rq->uid, rq->size, msg, msglen);
    if (!r)
        *id = p->next_id++;
    pthread_mutex_unlock(&p->lock);
    return r;
}

static void rec_from(struct progs_rec *rec, const struct progs_load_req *rq,
                     const struct vm_prog *vp, const char *name, uint32_t id)
{
    memset(rec, 0, sizeof(*rec));
    rec->id = id;
    rec->owner = rq->uid;
    rec->flags = rq->shared ? PROGS_F_SHARED : 0;
    rec->obj_size = (uint32_t)rq->size;
    rec->load_time_ns = clock_ns(CLOCK_REALTIME);
    progs_sha256(rq->obj, rq->size, rec->sha256);
    snprintf(rec->name, sizeof(rec->name), "%s", name);
    snprintf(rec->func, sizeof(rec->func), "%s", vp->name);
}

static void info_from(struct progs_info *info, const struct progs_rec *rec,
                      const struct vm_prog *vp)
{
    memset(info, 0, sizeof(*info));
    info->id = rec->id;
    info->owner = rec->owner;
    info->flags = rec->flags | (vp ? 0 : PROGS_F_BROKEN);
    info->insns = vp ? vp->ninsns : 0;
    info->load_time_ns = rec->load_time_ns;
    info->obj_size = rec->obj_size;
    memcpy(info->sha256, rec->sha256, sizeof(info->sha256));
    memcpy(info->name, rec->name, sizeof(info->name));
    memcpy(info->func, rec->func, sizeof(info->func));
}

/* Stores and registers a built program (store_lock held). */
static int commit(struct progs *p, const struct progs_load_req *rq, struct vm_prog *vp,
                  const char *name, struct progs_info *info, char *msg, size_t msglen)
{
    struct progs_rec rec;
    uint32_t id;
    int r = admit(p, rq, name, vp->ninsns, &id, msg, msglen);
    if (r)
        return r;
    rec_from(&rec, rq, vp, name, id);
    info_from(info, &rec, vp);
    struct progs_prog *pp = progs_entry_new(p, info, vp, NULL);
    r = pp ? progs_store_save(p, &rec, rq->obj) : -ENOMEM;
    if (r) {
        snprintf(msg, msglen, "cannot store the program in the image: %s", strerror(-r));
        if (pp)
            pp->prog = NULL;   /* the caller frees vp */
        progs_put(pp);
        return r;
    }
    pthread_mutex_lock(&p->lock);
    r = progs_insert(p, pp);
    pthread_mutex_unlock(&p->lock);
    if (r) {
        progs_store_remove(p, id);
        pp->prog = NULL;
        progs_put(pp);
        snprintf(msg, msglen, "out of memory");
    }
    return r;
}

int progs_load(struct progs *p, const struct progs_load_req *rq, struct progs_info *info,
               char *msg, size_t msglen)
{
    const char *name = rq->name && *rq->name ? rq->name : rq->func;
    if (rq->size > PROGS_OBJ_MAX) {
        snprintf(msg, msglen, "object of %zu bytes is over the device's limit of %u bytes",
                 rq->size, PROGS_OBJ_MAX);
        return -EFBIG;
    }
    if (name && *name && !name_ok(name)) {
        snprintf(msg, msglen, "bad program name '%s': use 1 to %u letters, digits, '_', '.' "
                 "or '-', not only digits", name, PROGS_NAME_MAX - 1);
        return -EINVAL;
    }
    if (p->read_only) {
        snprintf(msg, msglen, "the device is read-only (cisc up -o ro): no program can be "
                 "stored");
        return -EROFS;
    }
    struct vm_prog *vp;
    int r = progs_build(rq->obj, rq->size, rq->func, !p->lim.interp, &vp, msg, msglen);
    if (r)
        return r;
    if (!name || !*name)
        name = vp->name;
    pthread_mutex_lock(&p->store_lock);
    r = commit(p, rq, vp, name, info, msg, msglen);
    pthread_mutex_unlock(&p->store_lock);
    if (r) {
        vm_prog_free(vp);
        return r;
    }
    progs_logf(p, "program '%s' (id %u, function %s, %u instructions%s) loaded by uid %u",
               info->name, info->id, info->func, info->insns,
               rq->shared ? ", shared" : "", rq->uid);
    return 0;
}

/* Finds the program to unload and checks uid may (under p->lock). */
static int unload_target(struct progs *p, uint32_t uid, uint32_t id,
                         const struct progs_name *name, struct progs_prog **out)
{
    pthread_mutex_lock(&p->lock);
    struct progs_prog *pp = find(p, uid, id, name);
    int r = !pp ? -ENOENT : uid != 0 && uid != pp->info.owner ? -EPERM : 0;
    if (!r)
        *out = pp;
    pthread_mutex_unlock(&p->lock);
    return r;
}

int progs_unload(struct progs *p, uint32_t uid, uint32_t id, const char *name)
{
    struct progs_prog *pp;
    struct progs_name n;
    if (!id && progs_name_parse(name, &n))
        return -ENOENT;
    pthread_mutex_lock(&p->store_lock);
    int r = unload_target(p, uid, id, id ? NULL : &n, &pp);
    if (!r && p->read_only)
        r = -EROFS;
    if (!r)
        r = progs_store_remove(p, pp->info.id);
    if (!r) {
        pthread_mutex_lock(&p->lock);
        table_remove(p, pp);
        pthread_mutex_unlock(&p->lock);
        progs_logf(p, "program '%s' (id %u) unloaded by uid %u", pp->info.name, pp->info.id,
                   uid);
        progs_put(pp);   /* the table's reference */
    }
    pthread_mutex_unlock(&p->store_lock);
    return r;
}

/* ---- list, show, references ------------------------------------------------ */

int progs_list(struct progs *p, uint32_t from,
               int (*fn)(void *arg, const struct progs_info *info), void *arg)
{
    int r = 0;
    pthread_mutex_lock(&p->lock);
    for (uint32_t i = 0; i < p->n && !r; i++) {
        if (p->tab[i]->info.id < from)
            continue;
        struct progs_info info;
        snapshot(p->tab[i], &info);
        r = fn(arg, &info);
    }
    pthread_mutex_unlock(&p->lock);
    return r;
}

/* Writes why pp is broken and, when traces, its recent traces into text. */
static void status_text(struct progs_prog *pp, bool traces, char *text, size_t size)
{
    size_t len = 0;
    text[0] = '\0';
    if (pp->why)
        len += (size_t)snprintf(text, size, "not run: %s\n", pp->why);
    else if (pp->prog && pp->prog->jit)
        len += (size_t)snprintf(text, size, "runs as: JIT-compiled x86-64 code, %zu bytes\n",
                                vm_jit_size(pp->prog));
    else if (pp->prog)
        len += (size_t)snprintf(text, size, "runs as: interpreter\n");
    if (!traces)
        return;
    pthread_mutex_lock(&pp->trace_lock);
    unsigned n = pp->ntrace < PROGS_TRACE_KEEP ? pp->ntrace : PROGS_TRACE_KEEP;
    for (unsigned i = pp->ntrace - n; i < pp->ntrace && len < size; i++)
        len += (size_t)snprintf(text + len, size - len, "trace: %s\n",
                                pp->trace[i % PROGS_TRACE_KEEP]);
    pthread_mutex_unlock(&pp->trace_lock);
}

int progs_show(struct progs *p, uint32_t uid, uint32_t id, const char *name,
               struct progs_info *info, char *text, size_t textlen)
{
    struct progs_name n;
    if (!id && progs_name_parse(name, &n))
        return -ENOENT;
    pthread_mutex_lock(&p->lock);
    struct progs_prog *pp = find(p, uid, id, id ? NULL : &n);
    if (pp)
        snapshot(pp, info);
    if (pp && text && textlen)   /* traces carry the runs' data: owner and root only */
        status_text(pp, uid == 0 || uid == pp->info.owner, text, textlen);
    pthread_mutex_unlock(&p->lock);
    return pp ? 0 : -ENOENT;
}

int progs_get(struct progs *p, uint32_t uid, uint32_t id, struct progs_prog **out)
{
    pthread_mutex_lock(&p->lock);
    struct progs_prog *pp = find_id(p, id);
    int r = !pp ? -ENOENT : !pp->prog ? -ENOEXEC : 0;
    if (!r && uid != 0 && uid != pp->info.owner && !(pp->info.flags & PROGS_F_SHARED))
        r = -EACCES;
    if (!r) {
        __atomic_add_fetch(&pp->refs, 1, __ATOMIC_RELAXED);
        *out = pp;
    }
    pthread_mutex_unlock(&p->lock);
    return r;
}

void progs_log_broken(struct progs *p)
{
    pthread_mutex_lock(&p->lock);
    for (uint32_t i = 0; i < p->n; i++)
        if (p->tab[i]->why)
            progs_logf(p, "program '%s' (id %u) is not run: %s", p->tab[i]->info.name,
                       p->tab[i]->info.id, p->tab[i]->why);
    pthread_mutex_unlock(&p->lock);
}

void progs_limits_get(const struct progs *p, struct progs_limits *out)
{
    *out = p->lim;
}

void progs_totals(struct progs *p, uint32_t *count, uint32_t *broken, uint64_t *insns)
{
    pthread_mutex_lock(&p->lock);
    *count = p->n;
    *broken = 0;
    for (uint32_t i = 0; i < p->n; i++)
        *broken += !p->tab[i]->prog;
    *insns = p->insns;
    pthread_mutex_unlock(&p->lock);
}

/* ---- open and close ---------------------------------------------------------- */

/* A stored record becomes a table entry: rebuilt and re-verified, or
 * broken with the reason. */
static void reload(struct progs *p, uint32_t id, const struct progs_rec *rec,
                   const uint8_t *obj, const char *why)
{
    char msg[1200] = "";
    struct vm_prog *vp = NULL;
    struct progs_rec r = *rec;
    r.id = id;
    if (!why &&
        progs_build(obj, rec->obj_size, rec->func, !p->lim.interp, &vp, msg, sizeof(msg)))
        why = msg;
    if (vp && find_name(p, rec->owner, rec->owner, rec->name))
        why = "another stored program of its owner has the same name";
    else if (vp && (p->n >= p->lim.max_progs || p->insns + vp->ninsns > p->lim.max_insns))
        why = "over the device's limits (cisc up --max-progs / --max-prog-insns)";
    if (why) {
        vm_prog_free(vp);
        vp = NULL;
    }
    struct progs_info info;
    info_from(&info, &r, vp);
    struct progs_prog *pp = progs_entry_new(p, &info, vp, why);
    if (!pp || progs_insert(p, pp)) {
        progs_logf(p, "program record %u: out of memory", id);
        if (pp)
            progs_put(pp);
        else
            vm_prog_free(vp);
        return;
    }
    if (why)
        progs_logf(p, "program '%s' (id %u) is not run: %s", r.name, id, why);
    if (id >= p->next_id)
        p->next_id = id + 1;
}

static void limits_default(struct progs_limits *l)
{
    if (!l->max_progs)
        l->max_progs = PROGS_DEFAULT_MAX;
    if (!l->max_insns)
        l->max_insns = PROGS_DEFAULT_MAX_INSNS;
    if (!l->budget)
        l->budget = PROGS_DEFAULT_BUDGET;
    if (!l->max_progs_user)
        l->max_progs_user = PROGS_DEFAULT_MAX_USER;
    if (!l->max_bytes_user)
        l->max_bytes_user = PROGS_DEFAULT_BYTES_USER;
}

static struct progs *alloc_registry(struct sfs *fs, const struct progs_config *cfg)
{
    struct progs *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->fs = fs;
    p->lim = cfg ? cfg->lim : (struct progs_limits){ 0 };
    limits_default(&p->lim);
    p->trace = cfg && cfg->trace;
    p->read_only = cfg && cfg->read_only;
    p->log = cfg ? cfg->log : NULL;
    p->log_arg = cfg ? cfg->log_arg : NULL;
    pthread_mutex_init(&p->store_lock, NULL);
    pthread_mutex_init(&p->lock, NULL);
    return p;
}

int progs_open(struct sfs *fs, const struct progs_config *cfg, struct progs **out,
               char *err, size_t errlen)
{
    struct progs *p = sodium_init() < 0 ? NULL : alloc_registry(fs, cfg);   /* hashes, tokens */
    if (!p)
        return snprintf(err, errlen, "out of memory"), -ENOMEM;
    int r = p->read_only ? sysdir_find(fs, "progs", &p->dir) : sysdir_open(fs, "progs", &p->dir);
    uint32_t next = 1;
    if (r == -ENOENT && p->read_only) {
        *out = p;   /* read-only, no store yet: no programs, and none can be loaded */
        return 0;
    }
    if (!r)
        r = progs_store_next_id(p, &next);
    if (r) {
        snprintf(err, errlen, "cannot open the program store /%s/progs: %s", SYSDIR_NAME,
                 strerror(-r));
        progs_close(p);
        return r;
    }
    p->next_id = next;
    pthread_mutex_lock(&p->lock);   /* the table's order of operations is the usual one */
    r = progs_store_scan(p, reload);
    pthread_mutex_unlock(&p->lock);
    if (r) {
        snprintf(err, errlen, "cannot read the program store: %s", strerror(-r));
        progs_close(p);
        return r;
    }
    *out = p;
    return 0;
}

static void log_nothing(void *arg, const char *line)
{
    (void)arg;
    (void)line;   /* progs_open logs the same lines */
}

int progs_check(struct sfs *fs, char *err, size_t errlen)
{
    struct progs_config quiet = { .log = log_nothing };
    struct progs *p = sodium_init() < 0 ? NULL : alloc_registry(fs, &quiet);
    if (!p)
        return snprintf(err, errlen, "out of memory"), -ENOMEM;
    uint32_t next;
    int r = sysdir_find(fs, "progs", &p->dir);
    if (r == -ENOENT) {
        r = 0;   /* made by progs_open */
    } else {
        if (!r)
            r = progs_store_next_id(p, &next);
        if (!r)
            r = progs_store_scan(p, NULL);
        if (r)
            snprintf(err, errlen, "cannot read the program store /%s/progs: %s", SYSDIR_NAME,
                     strerror(-r));
    }
    progs_close(p);
    return r;
}

void progs_close(struct progs *p)
{
    if (!p)
        return;
    progs_streams_free(p);
    for (uint32_t i = 0; i < p->n; i++)
        progs_put(p->tab[i]);
    free(p->tab);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->store_lock);
    free(p);
}
