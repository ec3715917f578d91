/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The logger (common/log.c): one line per call to stderr, "sparkshim[PID]: level: message",
 * safe to call from any thread. User strings in a message are escaped (control characters,
 * bytes that are not UTF-8), so that no input can forge or split a line.
 */
#pragma once

enum util_log_level { UTIL_LOG_ERROR, UTIL_LOG_WARN, UTIL_LOG_INFO, UTIL_LOG_DEBUG };

void util_log_set_level(enum util_log_level level);
enum util_log_level util_log_get_level(void);
void util_log(enum util_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define log_error(...) util_log(UTIL_LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  util_log(UTIL_LOG_WARN, __VA_ARGS__)
#define log_info(...)  util_log(UTIL_LOG_INFO, __VA_ARGS__)
#define log_debug(...) util_log(UTIL_LOG_DEBUG, __VA_ARGS__)
