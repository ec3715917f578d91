/* SPDX-License-Identifier: Apache-2.0 */
/* Small helpers shared by the unit suites: fixture paths, files, directory listings. */
#pragma once

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXTURE_LIST_MAX 256

/* $FIXTURES/rel (meson sets FIXTURES to tests/unit/fixtures). */
static inline void fixture_path(const char *rel, char *buf, size_t size)
{
        const char *dir = getenv("FIXTURES");

        cr_assert(dir && dir[0], "FIXTURES is not set: run the suite through meson test");
        snprintf(buf, size, "%s/%s", dir, rel);
}

/* The whole file, NUL-terminated (malloc'd); *ret_len its length. NULL if it does not exist. */
static inline char *read_text(const char *path, size_t *ret_len)
{
        FILE *f = fopen(path, "re");
        char *buf = NULL;
        size_t len = 0, cap = 0;

        if (!f)
                return NULL;
        for (;;) {
                size_t n;
                if (cap - len < 4096) {
                        cap = cap ? cap * 2 : 8192;
                        buf = realloc(buf, cap + 1);
                        cr_assert(buf, "out of memory");
                }
                n = fread(buf + len, 1, cap - len, f);
                len += n;
                if (n == 0)
                        break;
        }
        fclose(f);
        buf[len] = '\0';
        if (ret_len)
                *ret_len = len;
        return buf;
}

/* Remove one trailing newline (fixture files end with one). */
static inline void chomp(char *s)
{
        size_t n = strlen(s);

        if (n > 0 && s[n - 1] == '\n')
                s[n - 1] = '\0';
}

static inline int compare_names(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in dir ending with suffix; returns how many (names are malloc'd). */
static inline size_t list_fixtures(const char *dir, const char *suffix,
                                   char *names[FIXTURE_LIST_MAX])
{
        DIR *d = opendir(dir);
        size_t n = 0, slen = strlen(suffix);

        cr_assert(d, "cannot open fixture directory %s: %s", dir, strerror(errno));
        for (struct dirent *de; (de = readdir(d));) {
                size_t len = strlen(de->d_name);
                if (len <= slen || strcmp(de->d_name + len - slen, suffix) != 0)
                        continue;
                cr_assert(n < FIXTURE_LIST_MAX, "too many fixtures in %s", dir);
                names[n++] = strdup(de->d_name);
        }
        closedir(d);
        qsort(names, n, sizeof(names[0]), compare_names);
        return n;
}

/* path with its suffix replaced by another one. */
static inline void sibling_path(const char *path, const char *old_suffix, const char *new_suffix,
                                char *buf, size_t size)
{
        size_t len = strlen(path), olen = strlen(old_suffix);

        cr_assert(len >= olen, "%s has no suffix %s", path, old_suffix);
        snprintf(buf, size, "%.*s%s", (int)(len - olen), path, new_suffix);
}

#ifndef ARGV_MAX
#define ARGV_MAX 256
#endif

/* An .argv fixture: one argv element per line, kept verbatim (spaces included). */
struct argv_file {
        char *text;
        int argc;
        char *argv[ARGV_MAX + 1];
};

static inline void load_argv(const char *path, struct argv_file *a)
{
        char *line;

        a->text = read_text(path, NULL);
        cr_assert(a->text, "cannot read %s", path);
        a->argc = 0;
        line = a->text;
        while (*line) {
                char *nl = strchr(line, '\n');
                cr_assert(nl, "%s: the last line has no newline", path);
                *nl = '\0';
                cr_assert(a->argc < ARGV_MAX, "%s: too many arguments", path);
                a->argv[a->argc++] = line;
                line = nl + 1;
        }
        a->argv[a->argc] = NULL;
}
