/*
 * cmd/json.h - a small JSON writer for the `--json` output of cisc
 * subcommands (status, info, list, prog list, prog show).
 *
 * The writer keeps only a nesting stack of "is the next member the first"
 * flags; the caller opens and closes objects and arrays in order.
 * Invariants:
 *   1. The output is one JSON value followed by a newline (json_end).
 *   2. Strings are escaped per RFC 8259: quote, backslash and every byte
 *      below 0x20; other bytes are copied as they are (paths are bytes).
 *   3. A key is given inside an object and NULL inside an array or at the
 *      top level.
 */
#ifndef CISC_CMD_JSON_H
#define CISC_CMD_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_DEPTH_MAX 16

struct json {
    FILE *f;
    int depth;
    bool first[JSON_DEPTH_MAX];
};

/* Starts a document on f. */
void json_begin(struct json *j, FILE *f);

/* Ends it: a newline. Returns 0, or -EIO if f had a write error. */
int json_end(struct json *j);

void json_obj_open(struct json *j, const char *key);
void json_obj_close(struct json *j);
void json_arr_open(struct json *j, const char *key);
void json_arr_close(struct json *j);

void json_str(struct json *j, const char *key, const char *v);   /* v NULL: null */
void json_u64(struct json *j, const char *key, uint64_t v);
void json_i64(struct json *j, const char *key, int64_t v);
void json_double(struct json *j, const char *key, double v);
void json_bool(struct json *j, const char *key, bool v);

/* A token of a "key value ..." report as JSON: a number when it reads as
 * one, else a string. */
void json_token(struct json *j, const char *key, const char *tok);

#endif
