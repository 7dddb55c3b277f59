/* cmd/json.c - the JSON writer of `--json` outputs (see json.h). */
#include "cmd/json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

void json_begin(struct json *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    j->first[0] = true;
}

int json_end(struct json *j)
{
    fputc('\n', j->f);
    return fflush(j->f) || ferror(j->f) ? -EIO : 0;
}

static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* The comma before a member (not before the first) and its key. */
static void member(struct json *j, const char *key)
{
    if (!j->first[j->depth])
        fputc(',', j->f);
    j->first[j->depth] = false;
    if (key) {
        put_string(j->f, key);
        fputc(':', j->f);
    }
}

static void open_level(struct json *j, const char *key, char c)
{
    member(j, key);
    fputc(c, j->f);
    if (j->depth + 1 < JSON_DEPTH_MAX)
        j->depth++;
    j->first[j->depth] = true;
}

static void close_level(struct json *j, char c)
{
    fputc(c, j->f);
    if (j->depth > 0)
        j->depth--;
}

void json_obj_open(struct json *j, const char *key) { open_level(j, key, '{'); }
void json_obj_close(struct json *j) { close_level(j, '}'); }
void json_arr_open(struct json *j, const char *key) { open_level(j, key, '['); }
void json_arr_close(struct json *j) { close_level(j, ']'); }

void json_str(struct json *j, const char *key, const char *v)
{
    member(j, key);
    if (v)
        put_string(j->f, v);
    else
        fputs("null", j->f);
}

void json_u64(struct json *j, const char *key, uint64_t v)
{
    member(j, key);
    fprintf(j->f, "%" PRIu64, v);
}

void json_i64(struct json *j, const char *key, int64_t v)
{
    member(j, key);
    fprintf(j->f, "%" PRId64, v);
}

void json_double(struct json *j, const char *key, double v)
{
    member(j, key);
    if (isfinite(v))
        fprintf(j->f, "%.10g", v);
    else
        fputs("null", j->f);
}

void json_bool(struct json *j, const char *key, bool v)
{
    member(j, key);
    fputs(v ? "true" : "false", j->f);
}

void json_token(struct json *j, const char *key, const char *tok)
{
    char *end;
    if (*tok == '-' || (*tok >= '0' && *tok <= '9')) {
        long long i = strtoll(tok, &end, 10);
        if (*end == '\0' && end != tok)
            return json_i64(j, key, (int64_t)i);
        double d = strtod(tok, &end);
        if (*end == '\0' && end != tok && isfinite(d))
            return json_double(j, key, d);
    }
    json_str(j, key, tok);
}
