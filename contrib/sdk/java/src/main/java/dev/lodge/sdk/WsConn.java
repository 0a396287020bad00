package dev.lodge.sdk;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One WebSocket of the protocol: binary messages reassembled from their
 * parts, decoded, and handed to a handler one at a time; the next part is
 * requested only once the handler has returned, so a slow consumer holds
 * the daemon back instead of filling memory. Sends are queued in order.
 */
final class WsConn implements WebSocket.Listener {
	/** Receives a connection's messages and its end, on one thread at a time. */
	interface Handler {
		void onMessage(WsConn conn, Map<String, Object> msg);

		/** The connection ended: a close code, or -1 and the error. */
		void onClosed(WsConn conn, int code, Throwable error);
	}

	private final Handler handler;
	private volatile WebSocket ws;
	private byte[] buf = new byte[64 * 1024];
	private int len;
	private CompletableFuture<?> sendChain = CompletableFuture.completedFuture(null);
	private final AtomicBoolean ended = new AtomicBoolean();

	private WsConn(Handler handler) {
		this.handler = handler;
	}

	/** Opens a WebSocket; the future fails with the typed error of a refused upgrade. */
	static CompletableFuture<WsConn> open(HttpClient client, URI uri, String token,
	    Duration connectTimeout, Handler handler) {
		WsConn c = new WsConn(handler);
		WebSocket.Builder b = client.newWebSocketBuilder();
		if (token != null)
			b.header("Authorization", "Bearer " + token);
		if (connectTimeout != null)
			b.connectTimeout(connectTimeout);
		return b.buildAsync(uri, c).handle((ws, err) -> {
			if (err != null)
				throw new CompletionException(translate(err));
			c.ws = ws;
			return c;
		});
	}

	/** The SDK's error for a failure to open a WebSocket. */
	static LodgeException translate(Throwable err) {
		while (err instanceof CompletionException && err.getCause() != null)
			err = err.getCause();
		if (err instanceof LodgeException)
			return (LodgeException) err;
		if (err instanceof WebSocketHandshakeException) {
			var r = ((WebSocketHandshakeException) err).getResponse();
			int status = r.statusCode();
			Object body = r.body();
			String text = body instanceof byte[] ? new String((byte[]) body, StandardCharsets.UTF_8)
			    : body instanceof String ? (String) body : "";
			if (!text.isEmpty())
				return ApiException.fromReply(status, text);
			return ApiException.of(ApiException.codeOfStatus(status), status,
			    "the WebSocket upgrade was refused with HTTP " + status);
		}
		if (err instanceof java.net.http.HttpTimeoutException)
			return new LodgeTimeoutException("connecting timed out: " + err.getMessage());
		return new ConnectionLostException("cannot connect: " + err, err);
	}

	@Override
	public void onOpen(WebSocket webSocket) {
		ws = webSocket;
		webSocket.request(1);
	}

	@Override
	public CompletionStage<?> onBinary(WebSocket webSocket, ByteBuffer data, boolean last) {
		int n = data.remaining();
		if (len + n > buf.length)
			buf = Arrays.copyOf(buf, Math.max(buf.length * 2, len + n));
		data.get(buf, len, n);
		len += n;
		if (!last) {
			webSocket.request(1);
			return null;
		}
		Map<String, Object> msg;
		try {
			msg = Codec.unpack(buf, 0, len);
		} catch (LodgeException e) {
			fail(e);
			return null;
		} finally {
			len = 0;
			if (buf.length > 1 << 20)
				buf = new byte[64 * 1024];
		}
		try {
			handler.onMessage(this, msg);
		} catch (RuntimeException | Error e) {
			fail(e);
			return null;
		}
		webSocket.request(1);
		return null;
	}

	@Override
	public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
		fail(new ConnectionLostException("the server sent a text message"));
		return null;
	}

	@Override
	public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
		if (ended.compareAndSet(false, true))
			handler.onClosed(this, statusCode, null);
		return null;
	}

	@Override
	public void onError(WebSocket webSocket, Throwable error) {
		if (ended.compareAndSet(false, true))
			handler.onClosed(this, -1, error);
	}

	private void fail(Throwable e) {
		abort();
		if (ended.compareAndSet(false, true))
			handler.onClosed(this, -1, e);
	}

	/** Queues one message; the future completes once it is handed to the socket. */
	synchronized CompletableFuture<?> send(byte[] message) {
		WebSocket w = ws;
		CompletableFuture<?> next = sendChain.thenCompose(v -> w.sendBinary(ByteBuffer.wrap(message), true));
		sendChain = next;
		return next;
	}

	/** Closes politely after what is queued (a detach). */
	synchronized void close() {
		WebSocket w = ws;
		sendChain = sendChain.handle((v, e) -> null)
		    .thenCompose(v -> w.sendClose(WebSocket.NORMAL_CLOSURE, ""))
		    .whenComplete((v, e) -> {
			    if (e != null)
				    w.abort();
		    });
		// the daemon answers a close; if it does not, drop the socket
		CompletableFuture.delayedExecutor(5, java.util.concurrent.TimeUnit.SECONDS)
		    .execute(() -> {
			    if (!ended.get())
				    abort();
		    });
	}

	/** Drops the connection at once. */
	void abort() {
		WebSocket w = ws;
		if (w != null)
			w.abort();
		if (ended.compareAndSet(false, true))
			handler.onClosed(this, -1, new ConnectionLostException("connection closed by the client"));
	}

	boolean isEnded() {
		return ended.get();
	}
}
