/*
 * human.c: sizes, ages and timestamps as people read them.
 *
 * Pure code.  Sizes are binary (1.5K is 1536 bytes), as ls -h prints them;
 * ages are one unit, coarse, as ps and docker print them.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"

void
human_size(uint64_t n, char *buf, size_t len)
{
	const char	*units = "KMGTPE";
	double		 v = (double)n;
	int		 i = -1;

	if (n < 1024) {
		snprintf(buf, len, "%lluB", (unsigned long long)n);
		return;
	}
	while (v >= 1024 && units[i + 1] != '\0') {
		v /= 1024;
		i++;
	}
	/* One decimal below 10, as in 1.5K; none above, as in 15K. */
	snprintf(buf, len, "%.*f%c", v < 10 ? 1 : 0, v, units[i]);
}

void
human_age(int64_t secs, char *buf, size_t len)
{
	if (secs < 0)
		secs = 0;
	if (secs < 60)
		snprintf(buf, len, "%llds", (long long)secs);
	else if (secs < 3600)
		snprintf(buf, len, "%lldm", (long long)(secs / 60));
	else if (secs < 86400)
		snprintf(buf, len, "%lldh", (long long)(secs / 3600));
	else
		snprintf(buf, len, "%lldd", (long long)(secs / 86400));
}

static int
human_digits(const char **s, int n, int *out)
{
	int	v = 0, i;

	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*s)[i]))
			return (-1);
		v = v * 10 + ((*s)[i] - '0');
	}
	*s += n;
	*out = v;
	return (0);
}

/* An RFC 3339 time ("2024-01-02T03:04:05.678Z" or with an offset). */
int
human_time(const char *s, time_t *out)
{
	struct tm	tm;
	int		y, mo, d, h, mi, sec, oh, om, sign;
	time_t		t;

	if (human_digits(&s, 4, &y) == -1 || *s++ != '-' ||
	    human_digits(&s, 2, &mo) == -1 || *s++ != '-' ||
	    human_digits(&s, 2, &d) == -1 || (*s != 'T' && *s != 't' &&
	    *s != ' ') || (s++, human_digits(&s, 2, &h)) == -1 ||
	    *s++ != ':' || human_digits(&s, 2, &mi) == -1 || *s++ != ':' ||
	    human_digits(&s, 2, &sec) == -1)
		return (-1);
	if (*s == '.') {
		s++;
		if (!isdigit((unsigned char)*s))
			return (-1);
		while (isdigit((unsigned char)*s))
			s++;
	}
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	if ((t = timegm(&tm)) == (time_t)-1)
		return (-1);
	if (*s == 'Z' || *s == 'z') {
		if (s[1] != '\0')
			return (-1);
	} else if (*s == '+' || *s == '-') {
		sign = *s++ == '+' ? 1 : -1;
		if (human_digits(&s, 2, &oh) == -1 || *s++ != ':' ||
		    human_digits(&s, 2, &om) == -1 || *s != '\0')
			return (-1);
		t -= sign * (oh * 3600 + om * 60);
	} else
		return (-1);
	*out = t;
	return (0);
}
