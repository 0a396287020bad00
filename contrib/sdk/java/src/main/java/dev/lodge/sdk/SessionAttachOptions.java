package dev.lodge.sdk;

import java.util.function.Consumer;

/** How {@link Sandbox#attachSession} attaches, and its callbacks. */
public class SessionAttachOptions {
	Integer cols;
	Integer rows;
	Long since;
	boolean readOnly;
	boolean pace;
	boolean strict;
	int maxReconnects = 10;
	Consumer<byte[]> onStdout;
	Consumer<byte[]> onStderr;
	Consumer<String> onStdoutText;
	Consumer<String> onStderrText;
	OutputListener onOutput;
	Runnable onLive;
	GapListener onGap;
	Consumer<ApiException> onError;
	Consumer<ExecExitInfo> onExit;

	/** Options with nothing set: replay the whole ring, resume on a lost connection. */
	public SessionAttachOptions() {
	}

	/** Resize the PTY to this many columns on attach. */
	public SessionAttachOptions setCols(int cols) { this.cols = cols; return this; }
	/** Resize the PTY to this many rows on attach. */
	public SessionAttachOptions setRows(int rows) { this.rows = rows; return this; }
	/** Replay from this offset instead of the start of the ring. */
	public SessionAttachOptions setSince(long offset) { this.since = offset; return this; }
	/** Attach read-only: input, resize and signal are refused. */
	public SessionAttachOptions setReadOnly(boolean readOnly) { this.readOnly = readOnly; return this; }
	/**
	 * Hold the process back rather than skip output: while every client is
	 * behind and this one still reads, the process waits for it, as for a
	 * terminal (default false). Not with {@link #setReadOnly}: the daemon
	 * refuses the two together with {@link BadRequestException}.
	 */
	public SessionAttachOptions setPace(boolean pace) { this.pace = pace; return this; }
	/** Fail with {@link GapException} instead of reporting a gap as an event. */
	public SessionAttachOptions setStrict(boolean strict) { this.strict = strict; return this; }
	/** How many reconnects in a row without progress before the attach fails (default 10). */
	public SessionAttachOptions setMaxReconnects(int n) { this.maxReconnects = n; return this; }
	/** Called with each chunk of stdout, every byte exactly once across reconnects. */
	public SessionAttachOptions setOnStdout(Consumer<byte[]> f) { this.onStdout = f; return this; }
	/** Called with each chunk of stderr. */
	public SessionAttachOptions setOnStderr(Consumer<byte[]> f) { this.onStderr = f; return this; }
	/** Called with stdout as text, decoded by one incremental UTF-8 decoder. */
	public SessionAttachOptions setOnStdoutText(Consumer<String> f) { this.onStdoutText = f; return this; }
	/** Called with stderr as text, decoded by one incremental UTF-8 decoder. */
	public SessionAttachOptions setOnStderrText(Consumer<String> f) { this.onStderrText = f; return this; }
	/** Called with every output chunk with its stream and offset. */
	public SessionAttachOptions setOnOutput(OutputListener f) { this.onOutput = f; return this; }
	/** Called when the replay has ended and live output begins (first attach only). */
	public SessionAttachOptions setOnLive(Runnable f) { this.onLive = f; return this; }
	/** Called when output was lost: the ring no longer held it. */
	public SessionAttachOptions setOnGap(GapListener f) { this.onGap = f; return this; }
	/** Called with each error the daemon reports on the open attach (such as forbidden). */
	public SessionAttachOptions setOnError(Consumer<ApiException> f) { this.onError = f; return this; }
	/** Called once with the process's exit, after the last output callback. */
	public SessionAttachOptions setOnExit(Consumer<ExecExitInfo> f) { this.onExit = f; return this; }
}
