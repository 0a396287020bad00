package dev.lodge.sdk;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.eclipse.jetty.client.Request;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.websocket.core.CloseStatus;
import org.eclipse.jetty.websocket.core.Configuration;
import org.eclipse.jetty.websocket.core.CoreSession;
import org.eclipse.jetty.websocket.core.Frame;
import org.eclipse.jetty.websocket.core.FrameHandler;
import org.eclipse.jetty.websocket.core.OpCode;
import org.eclipse.jetty.websocket.core.client.CoreClientUpgradeRequest;
import org.eclipse.jetty.websocket.core.exception.UpgradeException;

/**
 * One WebSocket of the protocol on Jetty's WebSocket core: binary messages
 * decoded (a whole frame straight from Jetty's buffer, a fragmented one
 * reassembled) and handed to a handler one at a time; the next frame is
 * demanded only once the handler has returned, so a slow consumer holds the
 * daemon back instead of filling memory. Sends go out in order.
 */
final class WsConn implements FrameHandler {
	/** The largest message accepted from the daemon (its output comes in 64 KiB). */
	private static final long MAX_INCOMING = 64L << 20;
	private static final int INPUT_BUFFER = 512 * 1024;
	/** How much of a refused upgrade's body is kept for its error. */
	private static final int MAX_REFUSAL = 64 * 1024;

	/** Receives a connection's messages and its end, on one thread at a time. */
	interface Handler {
		void onMessage(WsConn conn, Map<String, Object> msg);

		/** The connection ended: a close code, or -1 and the error. */
		void onClosed(WsConn conn, int code, Throwable error);
	}

	private final Handler handler;
	private volatile CoreSession session;
	private volatile Throwable error;
	private byte[] buf = new byte[0];
	private int len;
	private final AtomicBoolean ended = new AtomicBoolean();
	private final ByteArrayOutputStream refusal = new ByteArrayOutputStream();

	private WsConn(Handler handler) {
		this.handler = handler;
	}

	/** Opens a WebSocket; the future fails with the typed error of a refused upgrade. */
	static CompletableFuture<WsConn> open(Transport t, URI uri, String token,
	    Duration connectTimeout, Handler handler) {
		WsConn c = new WsConn(handler);
		CoreClientUpgradeRequest req = CoreClientUpgradeRequest.from(t.ws, uri, c);
		if (token != null)
			req.headers(h -> h.put("Authorization", "Bearer " + token));
		if (connectTimeout != null)
			req.timeout(connectTimeout.toMillis(), TimeUnit.MILLISECONDS);
		Configuration.ConfigurationCustomizer cfg = new Configuration.ConfigurationCustomizer();
		cfg.setMaxFrameSize(MAX_INCOMING);
		cfg.setMaxBinaryMessageSize(MAX_INCOMING);
		cfg.setIdleTimeout(Duration.ZERO); // an attach may be quiet for hours
		// reads of up to 512 KiB, the largest buffer the pool keeps: a
		// 64 KiB output message and its header fit whole (Jetty copies a
		// frame split across reads into a buffer of its own), and a busy
		// stream gives several messages per read; a stdin message in one write
		cfg.setInputBufferSize(INPUT_BUFFER);
		cfg.setOutputBufferSize(64 * 1024);
		req.setConfiguration(cfg);
		// the upgrade exposes no reply body: keep it from the request's own
		// response listener (added as the request begins to go out, before
		// any reply can come), so a refusal says what the daemon said
		req.listener(new Request.Listener() {
			@Override
			public void onBegin(Request r) {
				r.onResponseContent((resp, b) -> {
					if (resp.getStatus() >= 400)
						c.keepRefusal(b);
				});
			}
		});
		try {
			return t.ws.connect(req).handle((s, err) -> {
				if (err != null)
					throw new CompletionException(c.translate(err));
				return c;
			});
		} catch (IOException e) {
			return CompletableFuture.failedFuture(c.translate(e));
		}
	}

	/** Keeps the start of a refused upgrade's body, for its error. */
	private synchronized void keepRefusal(ByteBuffer b) {
		int n = Math.min(b.remaining(), MAX_REFUSAL - refusal.size());
		byte[] a = new byte[n];
		b.get(a);
		refusal.write(a, 0, n);
	}

	/** The SDK's error for a failure to open a WebSocket. */
	private LodgeException translate(Throwable err) {
		while (err instanceof CompletionException && err.getCause() != null)
			err = err.getCause();
		if (err instanceof LodgeException)
			return (LodgeException) err;
		if (err instanceof UpgradeException) {
			int status = ((UpgradeException) err).getResponseStatusCode();
			if (status >= 400) {
				String body;
				synchronized (this) {
					body = refusal.toString(StandardCharsets.UTF_8);
				}
				if (!body.isEmpty())
					return ApiException.fromReply(status, body);
				return ApiException.of(ApiException.codeOfStatus(status), status,
				    "the WebSocket upgrade was refused with HTTP " + status);
			}
			if (err.getCause() != null)
				err = err.getCause();
		}
		if (err instanceof TimeoutException)
			return new LodgeTimeoutException("connecting timed out: " + err.getMessage());
		return new ConnectionLostException("cannot connect: " + err, err);
	}

	@Override
	public void onOpen(CoreSession s, Callback callback) {
		session = s;
		callback.succeeded();
		s.demand();
	}

	@Override
	public void onFrame(Frame frame, Callback callback) {
		try {
			byte op = frame.getOpCode();
			if (op == OpCode.TEXT)
				throw new ConnectionLostException("the server sent a text message");
			if (op == OpCode.BINARY || op == OpCode.CONTINUATION)
				data(frame);
			callback.succeeded();
		} catch (RuntimeException | Error e) {
			callback.succeeded();
			fail(e);
			return;
		}
		CoreSession s = session;
		if (!ended.get())
			s.demand();
	}

	private void data(Frame frame) {
		ByteBuffer p = frame.hasPayload() ? frame.getPayload() : ByteBuffer.allocate(0);
		Map<String, Object> msg;
		if (frame.isFin() && len == 0) {
			msg = Codec.unpack(p);
		} else {
			int n = p.remaining();
			if (len + n > buf.length)
				buf = java.util.Arrays.copyOf(buf, Math.max(Math.max(buf.length * 2, 64 * 1024), len + n));
			p.get(buf, len, n);
			len += n;
			if (!frame.isFin())
				return;
			try {
				msg = Codec.unpack(buf, 0, len);
			} finally {
				len = 0;
				if (buf.length > 1 << 20)
					buf = new byte[0];
			}
		}
		handler.onMessage(this, msg);
	}

	@Override
	public void onError(Throwable cause, Callback callback) {
		error = cause;
		callback.succeeded();
	}

	@Override
	public void onClosed(CloseStatus status, Callback callback) {
		callback.succeeded();
		if (!ended.compareAndSet(false, true))
			return;
		Throwable e = error;
		int code = status.getCode();
		if (e == null && code == CloseStatus.NO_CLOSE)
			e = new ConnectionLostException("the connection dropped");
		if (e != null)
			handler.onClosed(this, -1, e);
		else
			handler.onClosed(this, code, null);
	}

	private void fail(Throwable e) {
		CoreSession s = session;
		if (s != null)
			s.abort();
		if (ended.compareAndSet(false, true))
			handler.onClosed(this, -1, e);
	}

	/** Queues one message; the future completes once it is handed to the socket. */
	CompletableFuture<?> send(byte[] message) {
		CompletableFuture<Void> f = new CompletableFuture<>();
		session.sendFrame(new Frame(OpCode.BINARY, ByteBuffer.wrap(message)),
		    Callback.from(() -> f.complete(null), f::completeExceptionally), false);
		return f;
	}

	/** Closes politely after what is queued (a detach). */
	void close() {
		CoreSession s = session;
		s.close(CloseStatus.NORMAL, "", Callback.NOOP);
		// the daemon answers a close; if it does not, drop the socket
		CompletableFuture.delayedExecutor(5, TimeUnit.SECONDS).execute(() -> {
			if (!ended.get())
				abort();
		});
	}

	/** Drops the connection at once. */
	void abort() {
		CoreSession s = session;
		if (s != null)
			s.abort();
		if (ended.compareAndSet(false, true))
			handler.onClosed(this, -1, new ConnectionLostException("connection closed by the client"));
	}

	boolean isEnded() {
		return ended.get();
	}
}
