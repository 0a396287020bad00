/*
 * tty.c: our terminal's mode and size, and leaving it as we found it.
 *
 * The settings before raw mode and the descriptor flags before O_NONBLOCK
 * are saved once; tty_restore puts them back and is safe in a signal
 * handler, so it runs at exit (atexit) and from the handlers of the signals
 * that end us (tty_exit_on_signals), which then let the signal do its work.
 */
#include <sys/ioctl.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"

#define TTY_FDS		3

static struct termios		 tty_saved;
static int			 tty_fd = -1;
static volatile sig_atomic_t	 tty_raw_on;
static int			 tty_flags[TTY_FDS];
static volatile sig_atomic_t	 tty_flags_saved[TTY_FDS];
static int			 tty_atexit_done;

static void
tty_atexit(void)
{
	if (!tty_atexit_done) {
		tty_atexit_done = 1;
		atexit(tty_restore);
	}
}

/*
 * Put the terminal on fd into raw mode (TTY_RAW: everything goes to the
 * remote terminal, which echoes) or character mode (TTY_CHAR: bytes go at
 * once, but we echo and translate newlines, for sessions without a PTY).
 */
int
tty_raw(int fd, int how)
{
	struct termios	t;

	if (tty_raw_on)
		return (0);
	if (tcgetattr(fd, &tty_saved) == -1)
		return (-1);
	t = tty_saved;
	if (how == TTY_RAW)
		cfmakeraw(&t);
	else {
		t.c_lflag &= ~(ICANON | ISIG | IEXTEN);
		t.c_iflag &= ~(IXON | IXOFF);
		t.c_cc[VMIN] = 1;
		t.c_cc[VTIME] = 0;
	}
	tty_atexit();
	tty_fd = fd;
	if (tcsetattr(fd, TCSADRAIN, &t) == -1)
		return (-1);
	tty_raw_on = 1;
	return (0);
}

/* Safe in a signal handler: only tcsetattr and fcntl. */
void
tty_restore(void)
{
	int	fd, saved = errno;

	if (tty_raw_on) {
		tty_raw_on = 0;
		(void)tcsetattr(tty_fd, TCSADRAIN, &tty_saved);
	}
	for (fd = 0; fd < TTY_FDS; fd++) {
		if (tty_flags_saved[fd]) {
			tty_flags_saved[fd] = 0;
			(void)fcntl(fd, F_SETFL, tty_flags[fd]);
		}
	}
	errno = saved;
}

int
tty_is_raw(void)
{
	return (tty_raw_on);
}

/* The window size of the terminal on fd; -1 if it is none. */
int
tty_size(int fd, int *cols, int *rows)
{
	struct winsize	ws;

	if (ioctl(fd, TIOCGWINSZ, &ws) == -1 || ws.ws_col == 0 ||
	    ws.ws_row == 0)
		return (-1);
	*cols = ws.ws_col;
	*rows = ws.ws_row;
	return (0);
}

/*
 * Make one of our standard descriptors non-blocking.  The flag belongs to
 * the open file, which a shell may share, so the old flags come back at
 * exit.  All three are saved before the first change: they often share
 * one open file (the terminal), and a later save would see our own
 * O_NONBLOCK and put it back at exit.
 */
void
tty_nonblock(int fd)
{
	int	flags, i;

	if (fd < 0 || fd >= TTY_FDS)
		return;
	for (i = 0; i < TTY_FDS; i++) {
		if (tty_flags_saved[i] ||
		    (flags = fcntl(i, F_GETFL)) == -1)
			continue;
		tty_flags[i] = flags;
		tty_flags_saved[i] = 1;
		tty_atexit();
	}
	if ((flags = fcntl(fd, F_GETFL)) != -1)
		(void)fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

static void
tty_signal_cb(int sig)
{
	tty_restore();
	/* SA_RESETHAND made the action the default one again. */
	raise(sig);
}

/* The signals that end us: restore the terminal first. */
void
tty_exit_on_signals(void)
{
	struct sigaction	sa;
	const int		sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	size_t			i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = tty_signal_cb;
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		(void)sigaction(sigs[i], &sa, NULL);
}
