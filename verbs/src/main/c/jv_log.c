#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jv.h"

static int debug_on(void)
{
	static int on = -1;
	if (on < 0) {
		const char *v = getenv("JROCE_VERBS_LOG");
		on = v != NULL && strcmp(v, "debug") == 0;
	}
	return on;
}

static void vsay(const char *fmt, va_list ap)
{
	char line[512];
	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "jroce: %s\n", line);
}

void jv_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
}

void jv_debug(const char *fmt, ...)
{
	if (!debug_on())
		return;
	va_list ap;
	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
}

int jv_unsupported(const char *verb, int *said, int err)
{
	if (!__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
		jv_warn("%s is not implemented by jroce (%s)", verb, strerror(err));
	return err;
}
