/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The logger (common/log.c): one line per call to stderr, "sparkshim[PID]: level: message",
 * safe to call from any thread. User strings in a message are escaped (control characters,
 * bytes that are not UTF-8), so that no input can forge or split a line.
 */
#pragma once

enum shim_log_level { SHIM_LOG_ERROR, SHIM_LOG_WARN, SHIM_LOG_INFO, SHIM_LOG_DEBUG };

void shim_log_set_level(enum shim_log_level level);
enum shim_log_level shim_log_get_level(void);
void shim_log(enum shim_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define log_error(...) shim_log(SHIM_LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  shim_log(SHIM_LOG_WARN, __VA_ARGS__)
#define log_info(...)  shim_log(SHIM_LOG_INFO, __VA_ARGS__)
#define log_debug(...) shim_log(SHIM_LOG_DEBUG, __VA_ARGS__)
