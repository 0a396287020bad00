package dev.lodge.sdk;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * A running exec stream ({@link Sandbox#execStream}). Output callbacks run
 * on one thread, in order; the daemon is held back while they run. The
 * process is tied to the connection: {@link #close()} or a lost connection
 * kills it, and {@link #waitForExit()} then fails with
 * {@link ConnectionLostException}, never an exit.
 */
public final class ExecStreamHandle implements AutoCloseable {
	private final ExecStreamOptions opts;
	private final Utf8Decoder outText = new Utf8Decoder();
	private final Utf8Decoder errText = new Utf8Decoder();
	private final CompletableFuture<ExecExitInfo> exit = new CompletableFuture<>();
	final CompletableFuture<ExecStreamHandle> started = new CompletableFuture<>();
	private final List<ApiException> errors = new ArrayList<>();
	private volatile WsConn conn;
	private volatile int maxMessageBytes = Codec.DEFAULT_MAX_MESSAGE_BYTES;
	private volatile long pid;
	private volatile ApiException lastError;

	ExecStreamHandle(ExecStreamOptions opts) {
		this.opts = opts;
	}

	final WsConn.Handler handler = new WsConn.Handler() {
		@Override
		public void onMessage(WsConn c, Map<String, Object> msg) {
			switch ((String) msg.get("type")) {
			case "started":
				maxMessageBytes = Codec.limit(msg);
				pid = msg.get("pid") instanceof Long ? (Long) msg.get("pid") : 0;
				started.complete(ExecStreamHandle.this);
				break;
			case "stdout":
			case "stderr":
				output((String) msg.get("type"), msg);
				break;
			case "exit":
				finishText();
				exit.complete(ExecExitInfo.of(msg));
				break;
			case "error":
				ApiException e = ApiException.of(String.valueOf(msg.get("code")), 0,
				    String.valueOf(msg.get("message")));
				lastError = e;
				if (!started.isDone()) {
					fail(e);
				} else {
					synchronized (errors) {
						errors.add(e);
					}
					if (opts.onError != null)
						opts.onError.accept(e);
				}
				break;
			default:
				break; // a type this client does not know: ignored
			}
		}

		@Override
		public void onClosed(WsConn c, int code, Throwable error) {
			if (exit.isDone())
				return;
			ApiException last = lastError;
			if (last != null && (code != 1000 || !started.isDone()))
				fail(last);
			else
				fail(new ConnectionLostException("the exec stream ended without an exit"
				    + (error != null ? ": " + error.getMessage() : " (close " + code + ")"), error));
		}
	};

	private void fail(LodgeException e) {
		started.completeExceptionally(e);
		exit.completeExceptionally(e);
		WsConn c = conn;
		if (c != null && !c.isEnded())
			c.abort();
	}

	private void output(String stream, Map<String, Object> msg) {
		Object d = msg.get("data");
		if (!(d instanceof byte[]))
			throw new ConnectionLostException("the server sent output without bin data");
		byte[] data = (byte[]) d;
		long off = msg.get("offset") instanceof Long ? (Long) msg.get("offset") : -1;
		if (opts.onOutput != null)
			opts.onOutput.onOutput(stream, off, data);
		if (stream.equals("stdout")) {
			if (opts.onStdout != null)
				opts.onStdout.accept(data);
			if (opts.onStdoutText != null)
				opts.onStdoutText.accept(outText.decode(data));
		} else {
			if (opts.onStderr != null)
				opts.onStderr.accept(data);
			if (opts.onStderrText != null)
				opts.onStderrText.accept(errText.decode(data));
		}
	}

	private void finishText() {
		if (opts.onStdoutText != null) {
			String s = outText.finish();
			if (!s.isEmpty())
				opts.onStdoutText.accept(s);
		}
		if (opts.onStderrText != null) {
			String s = errText.finish();
			if (!s.isEmpty())
				opts.onStderrText.accept(s);
		}
	}

	void attach(WsConn c) {
		conn = c;
	}

	/** The process's pid, from the daemon's {@code started}. */
	public long pid() {
		return pid;
	}

	/** The largest client message the daemon accepts; writes are split to fit. */
	public int maxMessageBytes() {
		return maxMessageBytes;
	}

	/** The errors the daemon reported on the open stream so far. */
	public List<ApiException> errors() {
		synchronized (errors) {
			return List.copyOf(errors);
		}
	}

	/** Sends text (its UTF-8) to stdin; returns once it is handed to the socket. */
	public void write(String text) {
		write(text.getBytes(StandardCharsets.UTF_8));
	}

	/** Sends bytes to stdin, split to the daemon's message limit; returns once handed to the socket. */
	public void write(byte[] data) {
		Waits.await(writeAsync(data), null, this::close);
	}

	/** Sends bytes to stdin without waiting. */
	public CompletableFuture<Void> writeAsync(byte[] data) {
		int step = Math.max(1, maxMessageBytes - Codec.STDIN_OVERHEAD);
		CompletableFuture<?> last = CompletableFuture.completedFuture(null);
		for (int off = 0; off < data.length; off += step)
			last = send(Codec.stdin(data, off, Math.min(step, data.length - off)));
		return last.thenApply(v -> null);
	}

	/** Closes the process's stdin (the protocol's {@code eof}; pipe mode). */
	public void end() {
		Waits.await(send(Codec.simple("eof")), null, this::close);
	}

	/** The same as {@link #end()}. */
	public void closeStdin() {
		end();
	}

	/**
	 * Sends a signal by name ({@code "INT"}, {@code "RTMIN+3"}); to the
	 * process group. Once the process has exited there is nothing to
	 * signal, and this does nothing; after a lost connection it throws.
	 */
	public void signal(String name) {
		control(Codec.signal(name));
	}

	/** Sends a signal by number, like {@link #signal(String)}. */
	public void signal(int number) {
		control(Codec.signal(number));
	}

	/** Resizes the terminal (PTY mode); nothing once the process has exited. */
	public void resize(int cols, int rows) {
		control(Codec.resize(cols, rows));
	}

	private void control(byte[] message) {
		if (exit.isDone() && !exit.isCompletedExceptionally())
			return;
		Waits.await(send(message), null, this::close);
	}

	private CompletableFuture<?> send(byte[] message) {
		WsConn c = conn;
		if (exit.isDone())
			return CompletableFuture.failedFuture(new ConnectionLostException("the exec stream has ended"));
		return c.send(message);
	}

	/**
	 * Waits for the exit; settles only after every output callback
	 * returned. An interrupt closes the connection (the daemon kills the
	 * process) and throws {@link LodgeInterruptedException}.
	 */
	public ExecExitInfo waitForExit() {
		return Waits.await(exit, null, this::close);
	}

	/** Waits at most {@code timeout}: {@link LodgeTimeoutException} after it (the stream runs on). */
	public ExecExitInfo waitForExit(Duration timeout) {
		return Waits.await(exit, timeout, this::close);
	}

	/** The exit as a future. */
	public CompletableFuture<ExecExitInfo> exitFuture() {
		return exit;
	}

	/** Drops the connection: the daemon kills the process; a pending wait fails. */
	@Override
	public void close() {
		WsConn c = conn;
		if (c != null)
			c.abort();
	}
}
