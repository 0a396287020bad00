package dev.lodge.sdk;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * An attachment to a session ({@link Sandbox#attachSession}). A lost
 * connection is resumed by itself with {@code since=} the next offset it
 * needs, with bounded backoff, so every byte reaches the callbacks exactly
 * once, in order; output the ring no longer held is reported to
 * {@link SessionAttachOptions#setOnGap} (or fails the attach with
 * {@link GapException} in strict mode). Callbacks run on one thread at a
 * time.
 */
public final class SessionAttachHandle implements AutoCloseable {
	private final Sandbox sandbox;
	private final String ref;
	private final SessionAttachOptions opts;
	private final Utf8Decoder outText = new Utf8Decoder();
	private final Utf8Decoder errText = new Utf8Decoder();
	private final CompletableFuture<ExecExitInfo> exit = new CompletableFuture<>();
	private final CompletableFuture<Void> live = new CompletableFuture<>();
	final CompletableFuture<SessionAttachHandle> firstAttached = new CompletableFuture<>();
	private volatile CompletableFuture<WsConn> ready = new CompletableFuture<>();
	private volatile WsConn conn;
	private volatile long next;
	private volatile long replayFrom = -1;
	private volatile long replayTo = -1;
	private volatile int maxMessageBytes = Codec.DEFAULT_MAX_MESSAGE_BYTES;
	private volatile int reconnects;
	private volatile int failures;
	private volatile long gaps;
	private volatile boolean detached;
	private volatile ApiException lastError;
	private volatile Session session;

	SessionAttachHandle(Sandbox sandbox, String ref, SessionAttachOptions opts) {
		this.sandbox = sandbox;
		this.ref = ref;
		this.opts = opts;
		this.next = opts.since != null ? opts.since : -1;
	}

	void connect() {
		StringBuilder q = new StringBuilder();
		if (opts.cols != null)
			q.append("&cols=").append(opts.cols);
		if (opts.rows != null)
			q.append("&rows=").append(opts.rows);
		if (next >= 0)
			q.append("&since=").append(next);
		if (opts.readOnly)
			q.append("&readOnly=1");
		if (opts.pace)
			q.append("&pace=1");
		String path = "/v1/sessions/" + Sandbox.encode(ref) + "/attach"
		    + (q.length() > 0 ? "?" + q.substring(1) : "");
		sandbox.openWs(path, handler).whenComplete((c, err) -> {
			if (err == null) {
				conn = c;
				if (detached)
					c.close();
				return;
			}
			LodgeException e = Waits.unwrap(err);
			// a 503 (a worker busy, a limit reached for now) may pass
			boolean refused = e instanceof ApiException && !(e instanceof UnavailableException);
			if (refused || !firstAttached.isDone() && reconnects == 0)
				fail(e);
			else
				retry(e);
		});
	}

	private void retry(Throwable why) {
		if (exit.isDone())
			return;
		if (detached) {
			exit.completeExceptionally(new DetachedException());
			return;
		}
		int n = ++failures;
		if (n > opts.maxReconnects) {
			fail(new ConnectionLostException("the attach lost its connection and could not resume: "
			    + why.getMessage(), why));
			return;
		}
		reconnects++;
		long delay = Math.min(2000, 50L << Math.min(n, 6));
		CompletableFuture.delayedExecutor(delay, TimeUnit.MILLISECONDS).execute(this::connect);
	}

	private void fail(LodgeException e) {
		firstAttached.completeExceptionally(e);
		ready.completeExceptionally(e);
		exit.completeExceptionally(e);
		WsConn c = conn;
		if (c != null && !c.isEnded())
			c.abort();
	}

	private final WsConn.Handler handler = new WsConn.Handler() {
		@Override
		public void onMessage(WsConn c, Map<String, Object> msg) {
			switch ((String) msg.get("type")) {
			case "attached":
				replayFrom = Codec.offset(msg, "replayFrom");
				replayTo = Codec.offset(msg, "replayTo");
				maxMessageBytes = Codec.limit(msg);
				if (msg.get("session") instanceof Map)
					session = new Session((Map<?, ?>) msg.get("session"));
				if (next < 0)
					next = replayFrom;
				conn = c;
				ready.complete(c);
				firstAttached.complete(SessionAttachHandle.this);
				break;
			case "gap":
				gap(Codec.offset(msg, "from"), Codec.offset(msg, "to"));
				break;
			case "stdout":
			case "stderr":
				output((String) msg.get("type"), msg);
				break;
			case "live":
				failures = 0;
				if (live.complete(null) && opts.onLive != null)
					opts.onLive.run();
				break;
			case "exit":
				finishText();
				ExecExitInfo info = ExecExitInfo.of(msg);
				if (opts.onExit != null)
					opts.onExit.accept(info);
				exit.complete(info);
				break;
			case "error":
				ApiException e = ApiException.of(String.valueOf(msg.get("code")), 0,
				    String.valueOf(msg.get("message")));
				lastError = e;
				if (opts.onError != null)
					opts.onError.accept(e);
				break;
			default:
				break;
			}
		}

		@Override
		public void onClosed(WsConn c, int code, Throwable error) {
			if (exit.isDone())
				return;
			ready = new CompletableFuture<>();
			if (detached) {
				exit.completeExceptionally(new DetachedException());
				return;
			}
			ApiException last = lastError;
			if (last != null && (code == 1008 || code == 1011)) {
				fail(last);
				return;
			}
			retry(error != null ? error : new ConnectionLostException("closed " + code));
		}
	};

	private void gap(long from, long to) {
		if (to <= from)
			return;
		if (opts.strict) {
			fail(new GapException(from, to));
			return;
		}
		gaps += to - from;
		if (next < to)
			next = to;
		if (opts.onGap != null)
			opts.onGap.onGap(from, to);
	}

	private void output(String stream, Map<String, Object> msg) {
		Object d = msg.get("data");
		if (!(d instanceof byte[]))
			throw new ConnectionLostException("the server sent output without bin data");
		byte[] data = (byte[]) d;
		long off = Codec.offset(msg, "offset");
		long end = off + data.length;
		if (end <= next)
			return; // already delivered before a reconnect
		if (off < next) {
			data = Arrays.copyOfRange(data, (int) (next - off), data.length);
			off = next;
		} else if (off > next) {
			gap(next, off);
			if (exit.isDone())
				return;
		}
		next = end;
		failures = 0;
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

	/** The session as the first {@code attached} described it. */
	public Session session() {
		return session;
	}

	/** Where the first replay began. */
	public long replayFrom() {
		return replayFrom;
	}

	/** Where the latest replay ends: output from here on is live. */
	public long replayTo() {
		return replayTo;
	}

	/** Completes when the replay has ended and live output begins. */
	public CompletableFuture<Void> live() {
		return live;
	}

	/** The offset of the next byte this handle will deliver. */
	public long nextOffset() {
		return next;
	}

	/** How many times the connection was opened again. */
	public int reconnects() {
		return reconnects;
	}

	/** How many bytes were lost to gaps. */
	public long gapBytes() {
		return gaps;
	}

	/** Sends text (its UTF-8) to the session's stdin. */
	public void write(String text) {
		write(text.getBytes(StandardCharsets.UTF_8));
	}

	/**
	 * Sends bytes to stdin, split to the daemon's message limit; waits for
	 * a connection while resuming. A message in flight when a connection
	 * drops may be lost.
	 */
	public void write(byte[] data) {
		Waits.await(writeAsync(data), null, () -> { });
	}

	/** Sends bytes to stdin without waiting. */
	public CompletableFuture<Void> writeAsync(byte[] data) {
		return ready.thenCompose(c -> {
			int step = Math.max(1, maxMessageBytes - Codec.STDIN_OVERHEAD);
			CompletableFuture<?> last = CompletableFuture.completedFuture(null);
			for (int off = 0; off < data.length; off += step)
				last = c.send(Codec.stdin(data, off, Math.min(step, data.length - off)));
			return last.thenApply(v -> null);
		});
	}

	private void sendOne(byte[] message) {
		Waits.await(ready.thenCompose(c -> c.send(message)), null, () -> { });
	}

	/** Closes the session's stdin (pipe mode). */
	public void end() {
		sendOne(Codec.simple("eof"));
	}

	/** Sends a signal by name; nothing once the process has exited. */
	public void signal(String name) {
		control(Codec.signal(name));
	}

	/** Resizes the PTY; nothing once the process has exited. */
	public void resize(int cols, int rows) {
		control(Codec.resize(cols, rows));
	}

	private void control(byte[] message) {
		if (exit.isDone() && !exit.isCompletedExceptionally())
			return;
		sendOne(message);
	}

	/**
	 * Waits for the process's exit, after the last output callback. Fails
	 * with {@link DetachedException} after {@link #detach()},
	 * {@link ConnectionLostException} if resuming failed. An interrupt
	 * detaches and throws {@link LodgeInterruptedException}.
	 */
	public ExecExitInfo waitForExit() {
		return Waits.await(exit, null, this::detach);
	}

	/** Waits at most {@code timeout} ({@link LodgeTimeoutException}; still attached). */
	public ExecExitInfo waitForExit(Duration timeout) {
		return Waits.await(exit, timeout, this::detach);
	}

	/** The exit as a future. */
	public CompletableFuture<ExecExitInfo> exitFuture() {
		return exit;
	}

	/** Detaches: the process runs on; a pending wait fails with {@link DetachedException}. */
	public void detach() {
		detached = true;
		WsConn c = conn;
		if (c != null && !c.isEnded())
			c.close();
		else if (c == null || c.isEnded())
			exit.completeExceptionally(new DetachedException());
	}

	/** The same as {@link #detach()}. */
	@Override
	public void close() {
		detach();
	}
}
