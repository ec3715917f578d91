/* SPDX-License-Identifier: Apache-2.0 */
/* common/error.h: the one error carrier. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "error.h"

Test(error, either_sign_in_positive_out)
{
        struct util_error err = {0};

        cr_expect_eq(util_error_set(&err, EINVAL, "a"), -EINVAL);
        cr_expect_eq(err.error, EINVAL);
        cr_expect_eq(util_error_set(&err, -ENOENT, "b"), -ENOENT);
        cr_expect_eq(err.error, ENOENT);
        cr_expect_str_eq(err.text, "b");
}

Test(error, null_carrier_still_returns)
{
        cr_expect_eq(util_error_set(NULL, EPERM, "%s", "nobody reads this"), -EPERM);
}

Test(error, one_line_whatever_the_input)
{
        struct util_error err = {0};

        /* a file name or key with a newline, an escape and DEL, as a user may write them */
        util_error_set(&err, EINVAL, "key '%s': bad", "a\nforged: line\x1b[2J\x7f");
        cr_expect_str_eq(err.text, "key 'a?forged: line?[2J?': bad");
        /* UTF-8 is not a control character */
        util_error_set(&err, EINVAL, "%s", "caf\xc3\xa9");
        cr_expect_str_eq(err.text, "caf\xc3\xa9");
}

Test(error, errno_is_kept)
{
        struct util_error err = {0};

        errno = EAGAIN;
        util_error_set(&err, ENOENT, "open: %s", strerror(ENOENT));
        cr_expect_str_eq(err.text, "open: No such file or directory");
        cr_expect_eq(errno, EAGAIN, "errno %d", errno);
}

Test(error, truncated_not_overrun)
{
        struct util_error err;
        char long_text[2 * UTIL_ERROR_TEXT_MAX];

        memset(&err, 'x', sizeof(err));
        memset(long_text, 'a', sizeof(long_text) - 1);
        long_text[sizeof(long_text) - 1] = '\0';
        util_error_set(&err, E2BIG, "%s", long_text);
        cr_expect_eq(strlen(err.text), UTIL_ERROR_TEXT_MAX - 1);
}
