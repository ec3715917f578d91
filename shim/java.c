/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `sparkshim java-home --jdk JDK DIR` and the java personality it installs.
 *
 * DIR mirrors JDK: each entry of JDK is a symlink in DIR, and DIR/bin holds a symlink for
 * each entry of JDK/bin, but for bin/java, which is a symlink to this program. The link
 * DIR/.sparkshim-jdk names JDK, and DIR/.sparkshim-policy (when java-home got --policy) the
 * policy of the home's executors; the personality finds them from the path the kernel
 * executed (AT_EXECFN), so that one binary serves any number of java homes. DIR is built
 * beside itself under a temporary name and put in place by one rename (RENAME_EXCHANGE when
 * it exists): a launch in the middle of a refresh sees the old home or the new one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"
#include "util.h"

#define JDK_LINK    ".sparkshim-jdk"
#define POLICY_LINK ".sparkshim-policy"

/* Symlink each entry of the directory src (but skip) into dirfd, pointing at src/entry. */
static int mirror_entries(const char *src, int dirfd, const char *skip, struct util_error *err)
{
        _cleanup_closedir_ DIR *d = opendir(src);
        struct dirent *e;

        if (!d)
                return util_error_set(err, errno, "%s: %s", src, strerror(errno));
        while ((errno = 0, e = readdir(d))) {
                char target[PATH_MAX];

                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
                    strcmp(e->d_name, skip) == 0 || strcmp(e->d_name, JDK_LINK) == 0 ||
                    strcmp(e->d_name, POLICY_LINK) == 0)
                        continue;
                if ((size_t)snprintf(target, sizeof(target), "%s/%s", src, e->d_name) >=
                    sizeof(target))
                        return util_error_set(err, ENAMETOOLONG, "%s/%s: path too long", src,
                                              e->d_name);
                if (symlinkat(target, dirfd, e->d_name) < 0)
                        return util_error_set(err, errno, "cannot link %s: %s", target,
                                              strerror(errno));
        }
        if (errno)
                return util_error_set(err, errno, "%s: %s", src, strerror(errno));
        return 0;
}

/* Remove a java home that this program built: symlinks, bin/ of symlinks, the directory. */
static int remove_home(int parentfd, const char *name)
{
        _cleanup_close_ int fd =
            openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *e;
        struct stat st;

        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d)
                return -errno;
        fd = -1; /* owned by d now */
        while ((e = readdir(d))) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                        continue;
                if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                if (S_ISLNK(st.st_mode)) {
                        if (unlinkat(dirfd(d), e->d_name, 0) < 0)
                                return -errno;
                } else if (S_ISDIR(st.st_mode) && strcmp(e->d_name, "bin") == 0) {
                        int r = remove_home(dirfd(d), "bin");
                        if (r < 0)
                                return r;
                } else {
                        /* not what java-home makes: keep it, and so the directory */
                        return -ENOTEMPTY;
                }
        }
        return unlinkat(parentfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

/* Is DIR (in parentfd) absent, empty, or a java home made by this program? */
static int check_target(int parentfd, const char *name, const char *path, bool *ret_exists,
                        struct util_error *err)
{
        _cleanup_close_ int fd = -1;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *e;
        char buf[8];

        *ret_exists = false;
        fd = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                return util_error_set(
                    err, errno,
                    "%s: %s; allowed: a new or empty directory, or one made by sparkshim java-home",
                    path, errno == ENOTDIR || errno == ELOOP ? "not a directory" : strerror(errno));
        }
        *ret_exists = true;
        if (readlinkat(fd, JDK_LINK, buf, sizeof(buf)) >= 0)
                return 0;
        d = fdopendir(fd);
        if (!d)
                return util_error_set(err, errno, "%s: %s", path, strerror(errno));
        fd = -1;
        while ((e = readdir(d)))
                if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                        return util_error_set(
                            err, EEXIST,
                            "%s: not empty and not made by sparkshim java-home (no %s); allowed: a "
                            "new or empty directory, or one made by sparkshim java-home",
                            path, JDK_LINK);
        return 0;
}

/* The JDK that --jdk names, resolved into jdk (PATH_MAX): a JDK's home, not a java home. */
static int check_jdk(const char *jdk_arg, char *jdk, struct util_error *err)
{
        char java[PATH_MAX + 16], tmp[PATH_MAX], buf[8];
        struct stat st;

        if (!realpath(jdk_arg, jdk))
                return util_error_set(err, errno,
                                      "--jdk: '%s': %s; allowed: a JDK's home directory", jdk_arg,
                                      strerror(errno));
        snprintf(java, sizeof(java), "%s/bin/java", jdk);
        if (stat(java, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & S_IXUSR))
                return util_error_set(
                    err, ENOENT,
                    "--jdk: '%s' has no executable bin/java; allowed: a JDK's home directory",
                    jdk_arg);
        /* every JDK since 7 has its release file: /usr, with its bin/java, is not a JDK */
        snprintf(tmp, sizeof(tmp), "%s/release", jdk);
        if (stat(tmp, &st) < 0 || !S_ISREG(st.st_mode))
                return util_error_set(
                    err, ENOENT, "--jdk: '%s' has no release file; allowed: a JDK's home directory",
                    jdk_arg);
        if (snprintf(tmp, sizeof(tmp), "%s/%s", jdk, JDK_LINK) < (int)sizeof(tmp) &&
            readlink(tmp, buf, sizeof(buf)) >= 0)
                return util_error_set(err, EINVAL,
                                      "--jdk: '%s' is a java home made by sparkshim java-home; "
                                      "allowed: the JDK it mirrors",
                                      jdk_arg);
        return 0;
}

/* This program, which bin/java will be, into self (PATH_MAX); as root, only a trusted one. */
static int check_self(char *self, struct util_error *err)
{
        ssize_t n;

        n = readlink("/proc/self/exe", self, PATH_MAX - 1);
        if (n < 0)
                return util_error_set(err, errno, "cannot read /proc/self/exe: %s",
                                      strerror(errno));
        self[n] = '\0';
        /* root runs bin/java for every executor: only root may be able to change it */
        if (geteuid() == 0) {
                struct util_error why = {0};
                char resolved[PATH_MAX];

                if (util_trusted_file(self, resolved, sizeof(resolved), &why) < 0)
                        return util_error_set(err, EPERM,
                                              "refused: bin/java would be %s: %s; allowed: a "
                                              "sparkshim only root can change (the installed one)",
                                              self, why.text);
        }
        return 0;
}

/* Where a java home goes: its name in the parent directory, and the copy built beside it. */
struct home_place {
        char dir_copy[PATH_MAX];    /* dir without trailing slashes: name points into it */
        char parent_copy[PATH_MAX]; /* dir's parent, for messages */
        const char *name;
        int parentfd;
        char tmp[PATH_MAX]; /* the copy's name in the parent */
};

/* The parent of dir opened (into place->parentfd), and refused when others could swap dir. */
static int open_place(const char *dir, struct home_place *place, struct util_error *err)
{
        char *parent_copy = place->parent_copy, *dir_copy = place->dir_copy;
        struct stat st;

        if (strlen(dir) >= sizeof(place->dir_copy) - 32 || !dir[0])
                return util_error_set(err, ENAMETOOLONG, "'%s': not a usable directory name", dir);
        strcpy(dir_copy, dir);
        strcpy(parent_copy, dir);
        /* trailing slashes would leave basename empty */
        for (size_t l = strlen(dir_copy); l > 1 && dir_copy[l - 1] == '/'; l--)
                dir_copy[l - 1] = parent_copy[l - 1] = '\0';
        place->name = basename(dir_copy);
        if (strcmp(place->name, ".") == 0 || strcmp(place->name, "..") == 0 ||
            strcmp(place->name, "/") == 0)
                return util_error_set(err, EINVAL, "'%s': name the java home's own directory", dir);
        place->parentfd = open(dirname(parent_copy), O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (place->parentfd < 0)
                return util_error_set(err, errno, "'%s': %s", parent_copy, strerror(errno));
        if (fstat(place->parentfd, &st) < 0)
                return util_error_set(err, errno, "'%s': %s", parent_copy, strerror(errno));
        if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
                return util_error_set(
                    err, EPERM,
                    "'%s': writable by group or others without the sticky bit: anyone could swap "
                    "the home; allowed: a directory only its owner may change",
                    parent_copy);
        return 0;
}

/* The copy's directory beside the home's place: .<name>.<pid>.<attempt>, into place->tmp. */
static int make_copy_dir(struct home_place *place, struct util_error *err)
{
        for (int attempt = 0;; attempt++) {
                snprintf(place->tmp, sizeof(place->tmp), ".%s.%d.%d", place->name, (int)getpid(),
                         attempt);
                if (mkdirat(place->parentfd, place->tmp, 0755) == 0)
                        return 0;
                if (errno != EEXIST || attempt > 100)
                        return util_error_set(err, errno, "cannot create %s/%s: %s",
                                              place->parent_copy, place->tmp, strerror(errno));
        }
}

/* The copy filled: JDK's entries, the two links, bin/ with JDK's bin but java, which is self. */
static int fill_copy(const struct home_place *place, const char *jdk, const char *policy,
                     const char *self, struct util_error *err)
{
        const char *parent_copy = place->parent_copy, *tmp = place->tmp;
        _cleanup_close_ int tmpfd = -1, binfd = -1;
        char java[PATH_MAX + 16];
        int r;

        tmpfd = openat(place->parentfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (tmpfd < 0 || fchmod(tmpfd, 0755) < 0)
                return util_error_set(err, errno, "%s/%s: %s", parent_copy, tmp, strerror(errno));
        r = mirror_entries(jdk, tmpfd, "bin", err);
        if (r < 0)
                return r;
        if (symlinkat(jdk, tmpfd, JDK_LINK) < 0 ||
            (policy && symlinkat(policy, tmpfd, POLICY_LINK) < 0) ||
            mkdirat(tmpfd, "bin", 0755) < 0)
                return util_error_set(err, errno, "%s/%s: %s", parent_copy, tmp, strerror(errno));
        binfd = openat(tmpfd, "bin", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (binfd < 0 || fchmod(binfd, 0755) < 0)
                return util_error_set(err, errno, "%s/%s/bin: %s", parent_copy, tmp,
                                      strerror(errno));
        snprintf(java, sizeof(java), "%s/bin", jdk);
        r = mirror_entries(java, binfd, "java", err);
        if (r < 0)
                return r;
        if (symlinkat(self, binfd, "java") < 0)
                return util_error_set(err, errno, "cannot link bin/java to %s: %s", self,
                                      strerror(errno));
        return 0;
}

/* The copy put in place by one rename (an exchange when a home exists, which then goes). */
static int put_in_place(const struct home_place *place, const char *dir, bool exists,
                        struct util_error *err)
{
        int parentfd = place->parentfd, r;

        if (exists) {
                if (syscall(SYS_renameat2, parentfd, place->tmp, parentfd, place->name,
                            RENAME_EXCHANGE) < 0)
                        return util_error_set(err, errno, "cannot put %s in place: %s", dir,
                                              strerror(errno));
                /* tmp is the old home now */
                r = remove_home(parentfd, place->tmp);
                if (r < 0)
                        log_warn("the previous java home, now %s/%s, was not removed: %s",
                                 place->parent_copy, place->tmp, strerror(-r));
        } else if (renameat(parentfd, place->tmp, parentfd, place->name) < 0) {
                return util_error_set(err, errno, "cannot put %s in place: %s", dir,
                                      strerror(errno));
        }
        return 0;
}

int shim_java_home(const char *jdk_arg, const char *policy, const char *dir, struct util_error *err)
{
        struct home_place place = {.parentfd = -1};
        char jdk[PATH_MAX], self[PATH_MAX];
        bool exists = false;
        int r;

        r = check_jdk(jdk_arg, jdk, err);
        if (r >= 0)
                r = check_self(self, err);
        if (r >= 0)
                r = open_place(dir, &place, err);
        if (r >= 0)
                r = check_target(place.parentfd, place.name, dir, &exists, err);
        if (r < 0)
                goto out;

        /* build it beside its place, then one rename */
        r = make_copy_dir(&place, err);
        if (r < 0)
                goto out;
        r = fill_copy(&place, jdk, policy, self, err);
        if (r >= 0)
                r = put_in_place(&place, dir, exists, err);
        if (r < 0) {
                (void)remove_home(place.parentfd, place.tmp);
                goto out;
        }
        log_info("%s: a java home of %s whose bin/java is %s, policy %s", dir, jdk, self,
                 policy ? policy : "the default");
out:
        if (place.parentfd >= 0)
                close(place.parentfd);
        return r;
}

/* Must a directory of the java home be trusted by root: root's and not writable by others? */
static bool root_only(int fd, const char *name, bool link)
{
        struct stat st;

        if (fstatat(fd, name, &st, link ? AT_SYMLINK_NOFOLLOW : AT_EMPTY_PATH) < 0)
                return false;
        return st.st_uid == 0 && (link || !(st.st_mode & (S_IWGRP | S_IWOTH)));
}

/*
 * Can only root change which home the absolute, resolved path dir names: each of its
 * directories root's, and not writable by group or others unless sticky (/tmp)? Else
 * anyone who may rename an entry on the way could swap in another home (another JDK).
 */
static bool root_only_path(const char *dir, char *bad, size_t size)
{
        char prefix[PATH_MAX];
        size_t len = strlen(dir);

        if (len >= sizeof(prefix) || dir[0] != '/')
                return false;
        for (size_t i = 0; i <= len; i++) {
                struct stat st;

                if (i > 0 && dir[i] != '/' && dir[i] != '\0')
                        continue;
                memcpy(prefix, dir, i);
                prefix[i] = '\0';
                if (lstat(i == 0 ? "/" : prefix, &st) < 0 || !S_ISDIR(st.st_mode) ||
                    st.st_uid != 0 ||
                    ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))) {
                        snprintf(bad, size, "%s", prefix);
                        return false;
                }
        }
        return true;
}

int shim_java_locate(const char *argv0, char *real, size_t size, char *policy, size_t policy_size,
                     struct util_error *err)
{
        const char *execfn = (const char *)getauxval(AT_EXECFN);
        char path[PATH_MAX], bin[PATH_MAX], jdk[PATH_MAX];
        struct util_error why = {0};
        _cleanup_close_ int homefd = -1, binfd = -1;
        struct stat a, b;
        ssize_t n;

        if (!execfn || !execfn[0])
                execfn = argv0;
        if (strlen(execfn) >= sizeof(path))
                return util_error_set(err, ENAMETOOLONG, "%s: path too long", execfn);
        strcpy(path, execfn);
        if (!realpath(dirname(path), bin))
                return util_error_set(err, errno, "%s: %s", execfn, strerror(errno));
        binfd = open(bin, O_PATH | O_DIRECTORY | O_CLOEXEC);
        homefd = openat(binfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (binfd < 0 || homefd < 0)
                return util_error_set(err, errno, "%s: %s", bin, strerror(errno));
        n = readlinkat(homefd, JDK_LINK, jdk, sizeof(jdk) - 1);
        if (n < 0)
                return util_error_set(err, errno,
                                      "%s/../%s: %s: this java is sparkshim, but not in a java "
                                      "home made by sparkshim java-home",
                                      bin, JDK_LINK, strerror(errno));
        jdk[n] = '\0';
        if (jdk[0] != '/')
                return util_error_set(err, EINVAL, "%s/../%s: '%s' is not an absolute path", bin,
                                      JDK_LINK, jdk);
        n = readlinkat(homefd, POLICY_LINK, policy, policy_size - 1);
        if (n < 0 && errno != ENOENT)
                return util_error_set(err, errno, "%s/../%s: %s", bin, POLICY_LINK,
                                      strerror(errno));
        policy[n < 0 ? 0 : n] = '\0';
        if (n >= 0 && (policy[0] != '/' || (size_t)n >= policy_size - 1))
                return util_error_set(err, EINVAL, "%s/../%s: '%s' is not an absolute path", bin,
                                      POLICY_LINK, policy);
        if (geteuid() == 0 && (!root_only(homefd, "", false) || !root_only(binfd, "", false) ||
                               !root_only(homefd, JDK_LINK, true) ||
                               (policy[0] && !root_only(homefd, POLICY_LINK, true))))
                return util_error_set(err, EPERM,
                                      "%s: refused: a java home root runs must be root's and not "
                                      "writable by group or others",
                                      bin);
        if (geteuid() == 0) {
                char home[PATH_MAX], bad[PATH_MAX];

                snprintf(home, sizeof(home), "%s", bin);
                if (!root_only_path(dirname(home), bad, sizeof(bad)))
                        return util_error_set(
                            err, EPERM,
                            "%s: refused: a directory on the way to a java home root runs must be "
                            "root's and not writable by group or others (or sticky)",
                            bad);
        }
        if ((size_t)snprintf(path, sizeof(path), "%s/bin/java", jdk) >= sizeof(path))
                return util_error_set(err, ENAMETOOLONG, "%s/bin/java: path too long", jdk);
        if (geteuid() == 0) {
                if (util_trusted_file(path, real, size, &why) < 0)
                        return util_error_set(err, EPERM, "%s: refused: %s", path, why.text);
        } else if ((size_t)snprintf(real, size, "%s", path) >= size) {
                return util_error_set(err, ENAMETOOLONG, "%s: path too long", path);
        }
        /* the JDK's java must not be this program (a home made of a home) */
        if (stat(real, &a) == 0 && stat("/proc/self/exe", &b) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino)
                return util_error_set(err, ELOOP, "%s is sparkshim itself, not a JDK's java", real);
        return 0;
}
